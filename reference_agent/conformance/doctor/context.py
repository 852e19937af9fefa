"""What the doctor's checks share: the settings, the SDK client, and the facts earlier checks learnt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

    from reference_agent.backends.databricks.config import DatabricksSettings

ALL = "ALL_PRIVILEGES"


@dataclass
class DoctorContext:
    settings: DatabricksSettings
    client: WorkspaceClient
    write_probe: bool = False
    user: str = ""  # SCIM Me userName (a service principal's application id)
    principals: set[str] = field(default_factory=set)  # the user, its groups, "users", "account users"
    admin: bool = False  # member of the workspace's admins group
    # (kind, full_name) -> privileges the identity holds there (None: could not be read)
    privileges: dict[tuple[str, str], set[str] | None] = field(default_factory=dict)
    missing: set[tuple[str, str]] = field(default_factory=set)  # (kind, full_name) of securables that do not exist
    compute_python: tuple[int, int] | None = None
    cluster_env: dict[str, str] = field(default_factory=dict)  # an existing cluster's spark_env_vars

    def holds(self, kind: str, full_name: str, privilege: str) -> bool | None:
        """True/False when the identity's privileges there were read, None when they could not be."""
        held = self.privileges.get((kind, full_name))
        if held is None:
            return None
        return privilege in held or ALL in held


    def lacks_parent(self, catalog: str, schema: str | None = None) -> str | None:
        """What is missing above a securable (``catalog main``), or None."""
        if ("catalog", catalog) in self.missing:
            return f"catalog {catalog} does not exist"
        if schema and ("schema", f"{catalog}.{schema}") in self.missing:
            return f"schema {catalog}.{schema} does not exist"
        return None


def reason(exc: BaseException) -> str:
    """The workspace's message without the SDK's ``Config: ...`` tail."""
    return str(exc).split(". Config: ")[0].strip()


def quoted(full_name: str) -> str:
    """``main.rlm`` -> ``main`.`rlm`` with backticks, as a GRANT statement names a securable."""
    return ".".join(f"`{part}`" for part in full_name.split("."))


def grant_sql(privileges: list[str], kind: str, full_name: str, principal: str) -> str:
    names = ", ".join(p.replace("_", " ") for p in privileges)
    return f"GRANT {names} ON {kind.upper()} {quoted(full_name)} TO `{principal}`;"
