"""``rlm-conformance doctor --databricks``: the preflight of a live recording against a workspace.

Reads the settings the backend reads (``DatabricksSettings``: environment, ``--databricks-*`` flags, a profile
in ~/.databrickscfg), then asks the workspace, through databricks-sdk's ``WorkspaceClient``, every question a
recording would otherwise answer by failing: who the token is, whether the warehouse, catalog, schema, volume,
tables, compute, payload and secret are there and usable. Read-only, except the optional write probe.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from harness.doctor.findings import DoctorReport, Finding, Level, error, ok, skipped
from reference_agent.backends.databricks.config import PARTS, DatabricksSettings, make_workspace_client
from reference_agent.backends.databricks.errors import DatabricksConfigError

from .catalog_checks import check_catalog_and_schema, check_tables, check_volume, check_write_probe
from .compute_checks import check_compute, check_payload
from .context import DoctorContext
from .workspace_checks import check_genai_secret, check_identity, check_warehouse

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

CONFIG_FIX = ("export the variables named (or pass the --databricks-* flags); every one is described in "
              "reference_agent/backends/databricks/config.py and docs/databricks.md")
# SDK retries of a connection error last 300 s by default: too long for a preflight that should answer quickly.
RETRY_TIMEOUT_S = 30
TITLE = "rlm-conformance doctor --databricks"


def run_databricks_doctor(*, env: Mapping[str, str] | None = None, args: argparse.Namespace | None = None,
                          settings: DatabricksSettings | None = None, client: WorkspaceClient | None = None,
                          write_probe: bool = False) -> DoctorReport:
    """Every check, in order; a check whose prerequisites failed is reported as skipped, saying which."""
    try:
        settings = settings if settings is not None else DatabricksSettings.from_env(env, args)
    except DatabricksConfigError as exc:
        return DoctorReport(TITLE, (error("configuration", str(exc), CONFIG_FIX), _skip_rest("the configuration")))
    findings: list[Finding] = [_configuration(settings)]
    complete = {part: _complete(settings, part) for part in PARTS}
    if not complete["workspace"]:
        return DoctorReport(TITLE, (*findings, _skip_rest("host and credentials")))
    if client is None:
        try:
            client = make_workspace_client(
                settings.with_overrides(retry_timeout_s=settings.retry_timeout_s or RETRY_TIMEOUT_S), hermetic=False)
        except DatabricksConfigError as exc:
            return DoctorReport(TITLE, (*findings, error("identity", str(exc), CONFIG_FIX),
                                        _skip_rest("the SDK configuration")))
    ctx = DoctorContext(settings=settings, client=client, write_probe=write_probe)
    findings += check_identity(ctx)
    if not ctx.user:
        return DoctorReport(TITLE, (*findings, _skip_rest("authentication")))

    def run(check: Callable[[], list[Finding]], part: str, names: tuple[str, ...]) -> bool:
        if complete[part]:
            findings.extend(check())
            return True
        findings.extend(skipped(name, f"configuration incomplete for {part}") for name in names)
        return False

    run(lambda: check_warehouse(ctx), "sql", ("warehouse",))
    run(lambda: check_catalog_and_schema(ctx), "sql" if complete["sql"] else "volume", ("catalog", "schema"))
    run(lambda: check_tables(ctx), "sql", ("tables",))
    run(lambda: check_volume(ctx), "volume", ("volume",))
    run(lambda: check_write_probe(ctx), "volume", ("volume write probe",))
    compute_checked = run(lambda: check_compute(ctx), "jobs", ("compute",))
    run(lambda: check_payload(ctx, compute_checked=compute_checked), "jobs", ("Job_B payload",))
    findings.extend(check_genai_secret(ctx, settings.compute_kind if complete["jobs"] else None))
    return DoctorReport(TITLE, tuple(findings))


def _configuration(settings: DatabricksSettings) -> Finding:
    try:
        settings.require(*PARTS)
    except DatabricksConfigError as exc:
        return error("configuration", str(exc), CONFIG_FIX)
    auth = "token" if settings.token else f"profile {settings.profile}"
    return ok("configuration", f"{settings.host} ({auth}); warehouse {settings.warehouse_id}; volume root "
                               f"{settings.volume_root}; compute {settings.compute_kind}")


def _complete(settings: DatabricksSettings, part: str) -> bool:
    try:
        settings.require(part)
    except DatabricksConfigError:
        return False
    return True


def _skip_rest(what: str) -> Finding:
    return Finding("workspace checks", Level.SKIPPED, f"not run: {what} failed (see above)")
