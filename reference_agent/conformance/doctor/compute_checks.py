"""Job_B's compute (existing cluster, new cluster spec, or serverless) and its payload."""

from __future__ import annotations

from databricks.sdk.errors import DatabricksError, NotFound, PermissionDenied

from harness.doctor.findings import Finding, error, ok, skipped, warning

from .context import DoctorContext, grant_sql, reason
from .payload import job_b_payload
from .runtimes import (
    ACCESS_MODES,
    LEGACY_MODE,
    LTS,
    PAYLOAD_PYTHON,
    dbr_python,
    dbr_release,
    dotted,
    in_payload_range,
    serverless_python,
)
from .workspace_checks import object_levels, object_permission

CLUSTER_USERS = {"CAN_ATTACH_TO", "CAN_RESTART", "CAN_MANAGE"}
CLUSTER_STARTERS = {"CAN_RESTART", "CAN_MANAGE"}
SUPPORTED_DBR = "DBR 15.4 LTS, 16.4 LTS or 17.3 LTS"


def check_compute(ctx: DoctorContext) -> list[Finding]:
    kind = ctx.settings.compute_kind
    if kind == "existing_cluster":
        return _existing_cluster(ctx)
    if kind == "new_cluster":
        spec = ctx.settings.new_cluster or {}
        if not spec.get("spark_version"):
            return [error("compute", "RLM_DATABRICKS_NEW_CLUSTER has no spark_version",
                          'add "spark_version": "15.4.x-scala2.12" (or another LTS runtime) to the spec')]
        return [ok("compute", "a new job cluster per run (RLM_DATABRICKS_NEW_CLUSTER)"),
                _runtime(ctx, spec["spark_version"], "RLM_DATABRICKS_NEW_CLUSTER's spark_version"),
                _access_mode(ctx, spec.get("data_security_mode"), spec.get("single_user_name"),
                             "RLM_DATABRICKS_NEW_CLUSTER")]
    return _serverless(ctx)


def _existing_cluster(ctx: DoctorContext) -> list[Finding]:
    cluster_id = ctx.settings.cluster_id
    try:
        cluster = ctx.client.clusters.get(cluster_id)
    except NotFound as exc:
        return [error("compute", f"no cluster {cluster_id}: {reason(exc)}",
                      "set RLM_DATABRICKS_CLUSTER_ID to an id from Compute → <cluster> → Configuration → JSON")]
    except DatabricksError as exc:
        return [error("compute", f"reading cluster {cluster_id} failed: {reason(exc)}",
                      "ask the cluster's owner for CAN ATTACH TO")]
    ctx.cluster_env = dict(cluster.spark_env_vars or {})
    state = cluster.state.value if cluster.state else "UNKNOWN"
    name = f"{cluster.cluster_name!r} ({cluster_id})"
    startup = ctx.settings.job_startup_s
    if state in ("RUNNING", "RESIZING"):
        found = ok("compute", f"cluster {name} is {state}")
    elif state in ("TERMINATED", "TERMINATING", "PENDING", "RESTARTING"):
        found = warning("compute", f"cluster {name} is {state}: the first run waits for it to start (minutes; "
                                   f"RLM_DATABRICKS_JOB_STARTUP_S={startup:g} s), and starting it needs CAN RESTART",
                        f"start it beforehand (`databricks clusters start {cluster_id}`)")
    else:
        found = warning("compute", f"cluster {name} reports state {state}", "check its event log in Compute")
    findings = [found, _runtime(ctx, cluster.spark_version or "", "the cluster's runtime"),
                _access_mode(ctx, cluster.data_security_mode.value if cluster.data_security_mode else None,
                             cluster.single_user_name, "the cluster")]
    permission = object_permission(ctx, "clusters", cluster_id, CLUSTER_USERS, "compute permission",
                                   "CAN ATTACH TO", f"Compute → {cluster.cluster_name} → Permissions")
    findings.append(permission)
    if permission.level == "ok" and state not in ("RUNNING", "RESIZING") and not ctx.admin:
        findings.extend(_may_start(ctx, cluster_id))
    return findings


def _may_start(ctx: DoctorContext, cluster_id: str) -> list[Finding]:
    try:
        levels = object_levels(ctx, "clusters", cluster_id)
    except DatabricksError:
        return []
    if levels & CLUSTER_STARTERS:
        return []
    return [warning("compute permission", f"the cluster is not running and {ctx.user} has only CAN ATTACH TO: a run "
                                          "cannot start it", "start it before recording, or get CAN RESTART")]


def _runtime(ctx: DoctorContext, spark_version: str, where: str) -> Finding:
    python = dbr_python(spark_version)
    ctx.compute_python = python
    release = dbr_release(spark_version)
    if python is None:
        return warning("compute runtime", f"{where} {spark_version!r} is not a runtime this doctor knows, so Job_B's "
                                          "Python is unknown", f"use {SUPPORTED_DBR} (Python "
                                                               f"{dotted(PAYLOAD_PYTHON[0])}–{dotted(PAYLOAD_PYTHON[1])})")
    label = f"DBR {release[0]}.{release[1]}{' LTS' if release in LTS else ''}"
    return ok("compute runtime", f"{where} {spark_version} is {label}: Python {dotted(python)}")


def _access_mode(ctx: DoctorContext, mode: str | None, single_user: str | None, where: str) -> Finding:
    if mode is None:
        return warning("compute access mode", f"{where} sets no data_security_mode: without one the workspace may "
                                              "create a no-isolation cluster, which has no Unity Catalog (/Volumes)",
                       'set "data_security_mode": "SINGLE_USER" (with "single_user_name") or "USER_ISOLATION"')
    level, meaning = ACCESS_MODES.get(mode, LEGACY_MODE)
    if level == "error":
        return error("compute access mode", f"{where}: access mode {mode}: {meaning}",
                     "use a cluster with access mode dedicated (SINGLE_USER) or standard (USER_ISOLATION)")
    if mode in ("SINGLE_USER", "DATA_SECURITY_MODE_DEDICATED") and single_user and single_user not in ctx.principals:
        return error("compute access mode", f"{where} is dedicated to {single_user}; runs submitted by {ctx.user} "
                                            "cannot use it", "use a cluster dedicated to you (or your group), or a "
                                                             "standard-access cluster")
    return ok("compute access mode", f"{mode}: {meaning}")


def _serverless(ctx: DoctorContext) -> list[Finding]:
    version = ctx.settings.environment_version
    python = serverless_python(version)
    ctx.compute_python = python
    first = ok("compute", "serverless jobs compute (RLM_DATABRICKS_SERVERLESS); whether it is enabled in this "
                          "workspace shows only at the first run (not probed: it would need a job run)")
    if python is None:
        return [first, warning("compute runtime", f"serverless environment version {version!r} is not one this "
                                                  "doctor knows, so Job_B's Python is unknown",
                               "set RLM_DATABRICKS_ENVIRONMENT_VERSION to 1, 2, 3 or 4")]
    return [first, ok("compute runtime", f"serverless environment version {version}: Python {dotted(python)}")]


def check_payload(ctx: DoctorContext, *, compute_checked: bool) -> list[Finding]:
    """Where Job_B's payload comes from (``job_b_payload``), and whether the compute's Python can run it."""
    plan = job_b_payload(ctx.settings)
    findings = [_payload_location(ctx, plan.path, plan.source)]
    low, high = PAYLOAD_PYTHON
    if not compute_checked:
        findings.append(skipped("Job_B payload", "the compute's Python is unknown: its check did not run"))
    elif ctx.compute_python is None:
        findings.append(warning("Job_B payload", f"the compute's Python is unknown; the payload needs "
                                                 f"{dotted(low)}–{dotted(high)}", f"use {SUPPORTED_DBR}"))
    elif not in_payload_range(ctx.compute_python):
        findings.append(error("Job_B payload", f"the compute runs Python {dotted(ctx.compute_python)}; the payload "
                                               f"supports {dotted(low)}–{dotted(high)}",
                              f"use {SUPPORTED_DBR} (DBR 13.3 LTS and later also mount /Volumes), or serverless "
                              "environment 1–4"))
    return findings


def _payload_location(ctx: DoctorContext, path: str, source: str) -> Finding:
    if source == "override":
        if not path.startswith("/Volumes/"):
            return warning("Job_B payload", f"RLM_DATABRICKS_WHEEL={path} is not a /Volumes path; only volume files "
                                            "are checked here", "put the wheel in the volume and name its /Volumes path")
        try:
            ctx.client.files.get_metadata(path)
        except NotFound:
            return error("Job_B payload", f"RLM_DATABRICKS_WHEEL names {path}, which does not exist",
                         f"upload it (`databricks fs cp <wheel> dbfs:{path}`), or unset RLM_DATABRICKS_WHEEL to have "
                         "the job runner build and upload the payload")
        except PermissionDenied as exc:
            return error("Job_B payload", f"cannot read {path}: {reason(exc)}", "READ VOLUME on its volume")
        except DatabricksError as exc:
            return error("Job_B payload", f"checking {path} failed: {reason(exc)}", "")
        return ok("Job_B payload", f"RLM_DATABRICKS_WHEEL: {path} exists")
    s = ctx.settings
    volume = f"{s.catalog}.{s.schema}.{s.volume}"
    if ctx.holds("volume", volume, "WRITE_VOLUME") is False:
        return error("Job_B payload", f"the payload is built from this install and uploaded to {path} at the first "
                                      f"run, which needs WRITE VOLUME on {volume}",
                     f"{grant_sql(['WRITE_VOLUME'], 'volume', volume, ctx.user)} Or upload a wheel yourself "
                     "and set RLM_DATABRICKS_WHEEL")
    return ok("Job_B payload", f"built from this install and uploaded to {path} at the first run")
