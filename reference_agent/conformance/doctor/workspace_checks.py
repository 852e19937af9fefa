"""The identity behind the token, the SQL warehouse, and the secret Job_B's llm_query reads."""

from __future__ import annotations

from databricks.sdk.errors import BadRequest, DatabricksError, NotFound, PermissionDenied, Unauthenticated
from requests.exceptions import RequestException

from harness.doctor.findings import Finding, error, ok, warning

from .context import DoctorContext, reason

TOKEN_FIX = ("create a new personal access token (Settings → Developer → Access tokens) and export DATABRICKS_TOKEN, "
             "or re-authenticate the profile of DATABRICKS_CONFIG_PROFILE (`databricks auth login --profile <name>`)")
WAREHOUSE_USERS = {"CAN_USE", "CAN_MANAGE", "IS_OWNER"}


def check_identity(ctx: DoctorContext) -> list[Finding]:
    """``current_user.me()``: who the token is. Every later check needs it; on an error ``ctx.user`` stays empty."""
    try:
        me = ctx.client.current_user.me()
    except Unauthenticated as exc:
        return [error("identity", f"the workspace refused the credentials (401): {reason(exc)}", TOKEN_FIX)]
    except PermissionDenied as exc:
        return [error("identity", f"the identity may not use the workspace's APIs (403): {reason(exc)}",
                      "ask a workspace admin to add the user or service principal to the workspace")]
    except DatabricksError as exc:
        return [error("identity", f"SCIM Me failed: {reason(exc)}", "check DATABRICKS_HOST")]
    except (RequestException, TimeoutError) as exc:  # the SDK retries connection errors, then times out
        cause = f" ({type(exc.__cause__).__name__})" if exc.__cause__ is not None else ""
        return [error("identity", f"cannot reach {ctx.settings.host}: {exc}{cause}",
                      "check DATABRICKS_HOST (the workspace URL, https://<name>.cloud.databricks.com) and the network")]
    ctx.user = me.user_name or ""
    groups = {g.display for g in me.groups or () if g.display}
    ctx.principals = {ctx.user, *groups, "users", "account users"}
    ctx.admin = "admins" in groups
    role = " (workspace admin)" if ctx.admin else ""
    return [ok("identity", f"authenticated as {ctx.user}{role}")]


def check_warehouse(ctx: DoctorContext) -> list[Finding]:
    warehouse_id = ctx.settings.warehouse_id
    try:
        warehouse = ctx.client.warehouses.get(warehouse_id)
    except (NotFound, BadRequest) as exc:
        return [error("warehouse", f"no SQL warehouse {warehouse_id}: {reason(exc)}",
                      "set DATABRICKS_WAREHOUSE_ID to the id in SQL Warehouses → <warehouse> → Connection details "
                      "(or `databricks warehouses list`)")]
    except DatabricksError as exc:
        return [error("warehouse", f"reading warehouse {warehouse_id} failed: {reason(exc)}",
                      "ask a workspace admin for CAN USE on the warehouse")]
    state = warehouse.state.value if warehouse.state else "UNKNOWN"
    name = f"{warehouse.name!r} ({warehouse_id})"
    timeout = ctx.settings.sql_timeout_s
    if state in ("DELETED", "DELETING"):
        found = error("warehouse", f"warehouse {name} is {state}",
                      "set DATABRICKS_WAREHOUSE_ID to a live warehouse")
    elif state == "RUNNING":
        found = ok("warehouse", f"warehouse {name} is RUNNING")
    elif state in ("STOPPED", "STOPPING", "STARTING"):
        found = warning("warehouse", f"warehouse {name} is {state}: the first statement starts it and waits "
                                     f"(seconds when serverless, minutes otherwise; RLM_DATABRICKS_SQL_TIMEOUT_S="
                                     f"{timeout:g} s per statement)",
                        f"start it beforehand (`databricks warehouses start {warehouse_id}`) or raise "
                        "RLM_DATABRICKS_SQL_TIMEOUT_S")
    else:
        found = warning("warehouse", f"warehouse {name} reports state {state}", "check it in SQL Warehouses")
    findings = [found]
    if found.level != "error":
        findings.append(object_permission(ctx, "warehouses", warehouse_id, WAREHOUSE_USERS, "warehouse permission",
                                           "CAN USE", f"SQL Warehouses → {warehouse.name} → Permissions"))
    return findings


def object_levels(ctx: DoctorContext, object_type: str, object_id: str) -> set[str]:
    """The identity's permission levels on a warehouse or cluster (raises when the ACL cannot be read)."""
    acl = ctx.client.permissions.get(object_type, object_id)
    levels: set[str] = set()
    for entry in acl.access_control_list or ():
        who = {entry.user_name, entry.group_name, entry.service_principal_name} - {None}
        if who & ctx.principals:
            levels |= {p.permission_level.value for p in entry.all_permissions or () if p.permission_level}
    return levels


def object_permission(ctx: DoctorContext, object_type: str, object_id: str, enough: set[str], check: str,
                       wanted: str, where: str) -> Finding:
    if ctx.admin:
        return ok(check, f"workspace admin: {wanted} on {object_type[:-1]} {object_id}")
    try:
        levels = object_levels(ctx, object_type, object_id)
    except PermissionDenied as exc:
        return warning(check, f"could not read the {object_type[:-1]}'s permissions (reading them needs CAN MANAGE): "
                              f"{reason(exc)}", f"make sure {ctx.user} has {wanted} ({where})")
    except DatabricksError as exc:
        return warning(check, f"could not read the {object_type[:-1]}'s permissions: {reason(exc)}",
                       f"make sure {ctx.user} has {wanted} ({where})")
    if levels & enough:
        return ok(check, f"{ctx.user} has {', '.join(sorted(levels & enough))} on {object_type[:-1]} {object_id}")
    held = ", ".join(sorted(levels)) or "no permission"
    return error(check, f"{ctx.user} has {held} on {object_type[:-1]} {object_id}; it needs {wanted}",
                 f"ask its owner or a workspace admin to grant {ctx.user} {wanted} ({where})")


def check_genai_secret(ctx: DoctorContext, compute_kind: str | None) -> list[Finding]:
    """The ``scope/key`` of GOOGLE_API_KEY for Job_B's direct-mode llm_query, and who can read the key."""
    secret = ctx.settings.genai_secret
    on_cluster = "GOOGLE_API_KEY" in ctx.cluster_env
    if not secret:
        if on_cluster:
            return [ok("genai secret", "RLM_DATABRICKS_GENAI_SECRET is not set; the cluster's Spark environment "
                                       "sets GOOGLE_API_KEY"), _exposure()]
        return [warning("genai secret", "RLM_DATABRICKS_GENAI_SECRET is not set: with the scripted model Job_B's "
                                        "llm_query is answered by the harness through the volume (no key needed), "
                                        "but with --llm-mode live it raises SubLmError (scenarios whose code calls "
                                        "the sub-LM fail)",
                        "put the Gemini key in a secret scope and export RLM_DATABRICKS_GENAI_SECRET=<scope>/<key> "
                        "(docs/databricks.md, llm_query on Databricks)")]
    scope, _, key = secret.partition("/")
    if not scope or not key or "/" in key:
        return [error("genai secret", f"RLM_DATABRICKS_GENAI_SECRET={secret!r} is not <scope>/<key>",
                      "export RLM_DATABRICKS_GENAI_SECRET=<scope>/<key>, e.g. rlm/google_api_key")]
    try:
        keys = {s.key for s in ctx.client.secrets.list_secrets(scope)}
    except NotFound:
        return [error("genai secret", f"secret scope {scope!r} does not exist",
                      f"`databricks secrets create-scope {scope}` then `databricks secrets put-secret {scope} {key}`")]
    except PermissionDenied as exc:
        return [error("genai secret", f"{ctx.user} may not read secret scope {scope!r}: {reason(exc)}",
                      f"a MANAGE holder of the scope runs `databricks secrets put-acl {scope} {ctx.user} READ`")]
    except DatabricksError as exc:
        return [error("genai secret", f"listing secret scope {scope!r} failed: {reason(exc)}", "")]
    if key not in keys:
        return [error("genai secret", f"secret scope {scope!r} has no key {key!r} (keys: {', '.join(sorted(keys)) or 'none'})",
                      f"`databricks secrets put-secret {scope} {key}` with the Gemini API key")]
    findings = [ok("genai secret", f"secret {scope}/{key} exists and {ctx.user} can read scope {scope!r}")]
    reference = f"{{{{secrets/{scope}/{key}}}}}"
    if compute_kind == "existing_cluster" and ctx.cluster_env.get("GOOGLE_API_KEY") != reference:
        findings.append(warning("genai secret", "the job runner cannot set environment variables on an existing "
                                                "cluster, and this one does not set GOOGLE_API_KEY to the secret",
                                f"add GOOGLE_API_KEY={reference} to the cluster's Spark environment variables "
                                "(Advanced options) and restart it"))
    elif compute_kind == "serverless":
        findings.append(warning("genai secret", "on serverless compute the backend sets no environment variable, "
                                                "so Job_B's llm_query gets no key",
                                "use RLM_DATABRICKS_CLUSTER_ID or RLM_DATABRICKS_NEW_CLUSTER when the code calls "
                                "llm_query"))
    return [*findings, _exposure()]


def _exposure() -> Finding:
    return warning("llm_query key exposure",
                   "direct mode: GOOGLE_API_KEY is in the environment of every process the compute starts "
                   "(spark_env_vars); Job_B's supervisor holds it and keeps it out of the analyst's code (an "
                   "allow-listed environment, a non-dumpable supervisor), but keeps the code from the other "
                   "processes' /proc/<pid>/environ only where the compute's kernel gives Landlock, which this "
                   "check cannot see (a block's result JSON says: confinement.applied holds filesystem_read)",
                   "use a key kept for this purpose (its own project and quota); check a block's result JSON on this "
                   "compute; anything else attached to the cluster (notebooks, other jobs) can read the key "
                   "(docs/databricks.md, the model key in Job_B)")
