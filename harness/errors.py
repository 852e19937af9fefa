"""One error family for everything the harness reports to its user.

Every message names the file, field, flag or variable involved and says how to
fix it. Code that catches errors from the harness catches ``HarnessError``;
add subclasses here (one line of docstring each) rather than raising bare
``RuntimeError``/``ValueError`` from harness code.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base class: a problem the user can fix; the message says where and how."""


class ConfigError(HarnessError):
    """A mode, option or environment variable is missing or inconsistent."""


class MissingCredentialsError(ConfigError):
    """Live mode needs a credential (an API key, a token) that is not set."""


class ScriptedEndpointError(HarnessError):
    """The local scripted Gemini endpoint could not start or was used wrongly."""


class CassetteError(HarnessError):
    """A cassette is missing, incomplete, has unplayed interactions, or can't be saved."""


class CassetteIdentityError(CassetteError):
    """The cassette was recorded for another scenario or target, or before the scenario changed."""


class SecretInCassetteError(CassetteError):
    """Saving was refused because a secret survived scrubbing; nothing was written."""


class NetworkBlockedError(HarnessError):
    """Code tried to open a non-loopback connection while the network guard was on.

    Deliberately not an ``OSError``: HTTP clients wrap ``OSError`` from
    ``connect`` into their own retryable connection errors, which would hide it.
    """


class CalledCodeError(HarnessError):
    """Code a scenario's run called (a target's factory, its session service) raised; the message names which part."""
