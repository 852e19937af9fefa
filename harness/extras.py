"""Optional parts of the suite and the extra that installs each: a clear message instead of an ImportError."""

from __future__ import annotations

import importlib.util

from .errors import ConfigError

def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # the parent package is missing, or blocked in sys.modules
        return False


# extra -> (the module it brings, what it is)
EXTRAS = {"databricks": ("databricks.sdk", "the Databricks SDK")}


def installed(extra: str) -> bool:
    return _installed(EXTRAS[extra][0])


def require_extra(extra: str, what: str) -> None:
    """Raise unless ``extra`` is installed; ``what`` names the option that needs it."""
    if not installed(extra):
        raise ConfigError(f"{what} needs {EXTRAS[extra][1]}, which is an optional extra of rlm-conformance: "
                          f"pip install 'rlm-conformance[{extra}]' (local runs need none of it).")


def databricks_installed() -> bool:
    return installed("databricks")


def require_databricks(what: str) -> None:
    require_extra("databricks", what)


HYPOTHESIS_INSTALL = "pip install 'hypothesis>=6.170,<7'"


def require_hypothesis(what: str) -> None:
    """Raise unless Hypothesis is installed (a dependency of rlm-conformance; an environment may still lack it,
    e.g. installed with --no-deps); ``what`` names the command that needs it."""
    if not _installed("hypothesis"):
        raise ConfigError(f"{what} generates conversations with Hypothesis, a dependency of rlm-conformance that is "
                          f"not installed in this environment: {HYPOTHESIS_INSTALL} (or reinstall rlm-conformance "
                          f"with its dependencies).")
