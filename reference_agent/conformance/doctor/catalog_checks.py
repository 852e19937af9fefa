"""Unity Catalog: the catalog, schema and volume exist, the identity holds the privileges the backend uses, and
(optionally) a file can be written to and deleted from the volume."""

from __future__ import annotations

import io
import secrets

from databricks.sdk.errors import DatabricksError, NotFound, PermissionDenied

from harness.doctor.findings import Finding, error, ok, skipped, warning

from .context import ALL, DoctorContext, grant_sql, quoted, reason

TABLES = ("sessions", "events", "app_state_keys", "user_state_keys", "app_states", "user_states", "artifacts")
PROBE_FOLDER = "_rlm"


def effective_privileges(ctx: DoctorContext, kind: str, full_name: str, owner: str | None) -> set[str] | None:
    """The identity's privileges on a securable, inherited ones included (``grants.get_effective``); None if unreadable.

    The owner of a securable holds every privilege on it. Grants to a group nested in one of the identity's
    groups are not seen (SCIM Me lists direct groups only).
    """
    if owner and owner in ctx.principals:
        held: set[str] | None = {ALL}
    else:
        try:
            listing = ctx.client.grants.get_effective(kind, full_name)
        except PermissionDenied:  # some callers may read only their own assignments
            try:
                listing = ctx.client.grants.get_effective(kind, full_name, principal=ctx.user)
            except DatabricksError:
                listing = None
        except DatabricksError:
            listing = None
        if listing is None:
            held = None
        else:
            held = {p.privilege.value for a in listing.privilege_assignments or () if a.principal in ctx.principals
                    for p in a.privileges or () if p.privilege}
    ctx.privileges[(kind, full_name)] = held
    return held


def _securable(ctx: DoctorContext, kind: str, full_name: str, needed: list[str], missing_fix: str) -> list[Finding]:
    """Exists (get), then holds ``needed`` there; a 403 on the get means it exists but is hidden from the identity."""
    getter = {"catalog": ctx.client.catalogs.get, "schema": ctx.client.schemas.get,
              "volume": ctx.client.volumes.read}[kind]
    owner = None
    try:
        owner = getattr(getter(full_name), "owner", None)
    except NotFound as exc:
        ctx.missing.add((kind, full_name))
        return [error(kind, f"{kind} {full_name} does not exist: {reason(exc)}", missing_fix)]
    except PermissionDenied:
        pass  # it exists; the privileges below say what is missing
    except DatabricksError as exc:
        return [error(kind, f"reading {kind} {full_name} failed: {reason(exc)}", "")]
    held = effective_privileges(ctx, kind, full_name, owner)
    if held is None:
        return [warning(kind, f"{kind} {full_name} exists; could not read {ctx.user}'s effective privileges on it",
                        f"check with SHOW GRANTS `{ctx.user}` ON {kind.upper()} {quoted(full_name)}; it needs "
                        f"{', '.join(p.replace('_', ' ') for p in needed)}")]
    missing = [p for p in needed if p not in held and ALL not in held]
    if missing:
        names = ", ".join(p.replace("_", " ") for p in missing)
        return [error(kind, f"{ctx.user} lacks {names} on {kind} {full_name}",
                      grant_sql(missing, kind, full_name, ctx.user))]
    how = "owner" if owner in ctx.principals else ", ".join(p.replace("_", " ") for p in needed)
    return [ok(kind, f"{kind} {full_name} exists; {ctx.user}: {how}")]


def check_catalog_and_schema(ctx: DoctorContext) -> list[Finding]:
    s = ctx.settings
    schema = f"{s.catalog}.{s.schema}"
    found = _securable(ctx, "catalog", s.catalog, ["USE_CATALOG"],
                       f"set RLM_DATABRICKS_CATALOG to an existing catalog, or CREATE CATALOG {quoted(s.catalog)};")
    if (gap := ctx.lacks_parent(s.catalog)) is not None:
        return [*found, skipped("schema", gap)]
    return found + _securable(ctx, "schema", schema, ["USE_SCHEMA"],
                              f"set RLM_DATABRICKS_SCHEMA to an existing schema, or CREATE SCHEMA {quoted(schema)};")


def check_tables(ctx: DoctorContext) -> list[Finding]:
    """CREATE TABLE on the schema for each table still absent; SELECT and MODIFY on each one someone else made."""
    s = ctx.settings
    schema = f"{s.catalog}.{s.schema}"
    if (gap := ctx.lacks_parent(s.catalog, s.schema)) is not None:
        return [skipped("tables", gap)]
    if False in (ctx.holds("catalog", s.catalog, "USE_CATALOG"), ctx.holds("schema", schema, "USE_SCHEMA")):
        # without them every table answers 403, whether it exists or not
        return [skipped("tables", "not checked until USE CATALOG and USE SCHEMA are granted (see above)")]
    absent, problems, usable = [], [], []
    for table in TABLES:
        full = f"{schema}.{table}"
        owner = None
        try:
            owner = ctx.client.tables.get(full).owner
        except NotFound:
            absent.append(table)
            continue
        except PermissionDenied:
            pass
        except DatabricksError as exc:
            problems.append(error("tables", f"reading table {full} failed: {reason(exc)}", ""))
            continue
        held = effective_privileges(ctx, "table", full, owner)
        if held is None:
            problems.append(warning("tables", f"table {full} exists; could not read {ctx.user}'s privileges on it",
                                    f"check with SHOW GRANTS `{ctx.user}` ON TABLE {quoted(full)}; it needs "
                                    "SELECT, MODIFY"))
            continue
        missing = [p for p in ("SELECT", "MODIFY") if p not in held and ALL not in held]
        if missing:
            problems.append(error("tables", f"table {full} exists (owner {owner or 'unknown'}) and {ctx.user} lacks "
                                            f"{', '.join(missing)} on it", grant_sql(missing, "table", full, ctx.user)))
        else:
            usable.append(table)
    if absent:
        create = ctx.holds("schema", schema, "CREATE_TABLE")
        if create is False:
            problems.append(error("tables", f"table(s) {', '.join(absent)} do not exist yet and {ctx.user} lacks "
                                            f"CREATE TABLE on schema {schema}",
                                  grant_sql(["CREATE_TABLE"], "schema", schema, ctx.user)))
        elif create is None:
            problems.append(warning("tables", f"table(s) {', '.join(absent)} do not exist yet; could not read whether "
                                              f"{ctx.user} holds CREATE TABLE on schema {schema}",
                                    f"check with SHOW GRANTS `{ctx.user}` ON SCHEMA {quoted(schema)}"))
    if problems:
        return problems
    parts = ([f"created at the first run (CREATE TABLE): {', '.join(absent)}"] if absent else []) + (
        [f"exist, readable and writable: {', '.join(usable)}"] if usable else [])
    return [ok("tables", "; ".join(parts))]


def check_volume(ctx: DoctorContext) -> list[Finding]:
    s = ctx.settings
    full = f"{s.catalog}.{s.schema}.{s.volume}"
    if (gap := ctx.lacks_parent(s.catalog, s.schema)) is not None:
        return [skipped("volume", gap)]
    return _securable(ctx, "volume", full, ["READ_VOLUME", "WRITE_VOLUME"],
                      f"CREATE VOLUME {quoted(full)}; (needs CREATE VOLUME on the schema), or set "
                      "RLM_DATABRICKS_VOLUME to an existing volume")


def check_write_probe(ctx: DoctorContext) -> list[Finding]:
    """Upload a small file under ``<volume_root>/_rlm/`` and delete it again (only with ``--write-probe``)."""
    folder = f"{ctx.settings.volume_root}/{PROBE_FOLDER}"
    if not ctx.write_probe:
        return [skipped("volume write probe", f"not run: pass --write-probe to upload a small file under {folder}/ "
                                              "and delete it")]
    volume = f"{ctx.settings.catalog}.{ctx.settings.schema}.{ctx.settings.volume}"
    if (gap := ctx.lacks_parent(ctx.settings.catalog, ctx.settings.schema)) or ("volume", volume) in ctx.missing:
        return [skipped("volume write probe", gap or f"volume {volume} does not exist")]
    path = f"{folder}/doctor-probe-{secrets.token_hex(4)}.txt"
    try:
        ctx.client.files.upload(path, io.BytesIO(b"rlm-conformance doctor write probe\n"), overwrite=False)
    except DatabricksError as exc:
        return [error("volume write probe", f"writing {path} failed: {reason(exc)}",
                      grant_sql(["WRITE_VOLUME"], "volume", volume, ctx.user))]
    try:
        ctx.client.files.delete(path)
    except DatabricksError as exc:
        return [error("volume write probe", f"wrote {path} but could not delete it: {reason(exc)}",
                      f"delete it by hand (`databricks fs rm dbfs:{path}`)")]
    return [ok("volume write probe", f"wrote and deleted {path}")]
