"""Optional parts of the suite and the extra that installs each: a clear message instead of an ImportError."""

from __future__ import annotations

import importlib.util

from .errors import ConfigError

DATABRICKS_EXTRA = "pip install 'rlm-conformance[databricks]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # the parent package is missing, or blocked in sys.modules
        return False


def databricks_installed() -> bool:
    return _installed("databricks.sdk")


def require_databricks(what: str) -> None:
    """Raise unless databricks-sdk is installed; ``what`` names the option that needs it."""
    if not databricks_installed():
        raise ConfigError(f"{what} needs the Databricks SDK, which is an optional extra of rlm-conformance: "
                          f"{DATABRICKS_EXTRA} (local runs need none of it).")


HYPOTHESIS_INSTALL = "pip install 'hypothesis>=6.170,<7'"


def require_hypothesis(what: str) -> None:
    """Raise unless Hypothesis is installed (a dependency of rlm-conformance; an environment may still lack it,
    e.g. installed with --no-deps); ``what`` names the command that needs it."""
    if not _installed("hypothesis"):
        raise ConfigError(f"{what} generates conversations with Hypothesis, a dependency of rlm-conformance that is "
                          f"not installed in this environment: {HYPOTHESIS_INSTALL} (or reinstall rlm-conformance "
                          f"with its dependencies).")
