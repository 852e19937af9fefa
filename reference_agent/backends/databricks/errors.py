"""Errors of the Databricks backend, and the one place SDK errors become them.

Every message says what failed, why, and which setting (environment variable
or flag) fixes it, so a misconfigured workspace reads as a configuration
error, not as a stack trace from ``requests``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_agent.storage.sql import WriteConflictError

if TYPE_CHECKING:  # the SDK is imported by translate() only: importing it costs ~1.8 s, see config.py
    from databricks.sdk.errors import DatabricksError


class DatabricksBackendError(RuntimeError):
    """Base of every error the Databricks backend raises."""


class DatabricksConfigError(DatabricksBackendError, ValueError):
    """A setting is missing or wrong; the message names the variable to set."""


class DatabricksAuthError(DatabricksBackendError):
    """The workspace rejected the credentials (HTTP 401) or the permission (HTTP 403)."""


class DatabricksSqlError(DatabricksBackendError):
    """A SQL statement FAILED, was CANCELED or CLOSED, or its result was cut."""


class DatabricksWriteConflictError(DatabricksSqlError, WriteConflictError):
    """A statement FAILED with a Delta concurrent-modification error class (SQLSTATE class 2D521)."""


class DatabricksTimeoutError(DatabricksBackendError, TimeoutError):
    """A statement or a job run did not finish in time and was cancelled."""


class DatabricksJobError(DatabricksBackendError):
    """A Job_B run ended without a result JSON (FAILED, INTERNAL_ERROR, SKIPPED, TIMEDOUT, ...)."""


TOKEN_HINT = (
    "the token in DATABRICKS_TOKEN (or the profile named by DATABRICKS_CONFIG_PROFILE) is expired, revoked or "
    "for another workspace: create a new personal access token (User Settings -> Developer -> Access tokens) "
    "and set DATABRICKS_TOKEN, and check DATABRICKS_HOST"
)


def translate(exc: DatabricksError, doing: str, *, not_found: str | None = None) -> DatabricksBackendError:
    """``exc`` from the SDK as a backend error whose message says what to fix.

    ``doing`` says what was attempted ("executing a SQL statement"); ``not_found``
    is the hint for an HTTP 404 (e.g. which setting names the missing thing).
    """
    from databricks.sdk.errors import NotFound, PermissionDenied, Unauthenticated

    if isinstance(exc, Unauthenticated):
        return DatabricksAuthError(
            f"Databricks rejected the credentials while {doing} (HTTP 401: {exc}): {TOKEN_HINT}.")
    if isinstance(exc, PermissionDenied):
        return DatabricksAuthError(
            f"Databricks refused permission while {doing} (HTTP 403: {exc}): the identity behind DATABRICKS_TOKEN "
            "needs access to the warehouse, catalog/schema/volume and job compute it uses."
        )
    if isinstance(exc, NotFound) and not_found:
        return DatabricksConfigError(f"Databricks answered 'not found' while {doing} ({exc}): {not_found}.")
    code = getattr(exc, "error_code", None) or type(exc).__name__
    return DatabricksBackendError(f"Databricks API error while {doing}: [{code}] {exc}")
