"""What the fake workspace holds besides files, tables' rows and runs: the identity, SQL warehouses, clusters,
Unity Catalog securables with their grants, secret scopes and object ACLs.

Healthy by default and matching the harness's replay settings (catalog ``main``, schema ``rlm``, volume
``vol``, warehouse ``fakewarehouse0001``, cluster ``0101-000000-fakecluster``): the token's user may use all of
them. Tests change one thing at a time on ``FakeWorkspace.objects``::

    fake.objects.warehouses["fakewarehouse0001"].state = "STOPPED"
    fake.objects.schemas["main.rlm"].grants[FAKE_USER].discard("CREATE_TABLE")
    del fake.objects.secret_scopes["rlm"]

Privileges are Unity Catalog's REST names (``USE_CATALOG``, ``CREATE_TABLE``, ``READ_VOLUME`` ...). A grant on
a catalog is inherited by its schemas and theirs, as in Unity Catalog; the owner of a securable holds every
privilege on it; ``ALL_PRIVILEGES`` stands for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FAKE_USER = "user@example.com"  # = the name cassettes scrub user names to
DEFAULT_CLUSTER = "0101-000000-fakecluster"
CATALOG_ADMIN = "catalog-admins"  # owns the securables: the token's user is not their owner


@dataclass
class Warehouse:
    state: str = "RUNNING"  # RUNNING, STARTING, STOPPED, STOPPING, DELETING, DELETED
    name: str = "rlm fake warehouse"
    warehouse_type: str = "PRO"
    enable_serverless_compute: bool = True
    auto_stop_mins: int = 10


@dataclass
class Cluster:
    state: str = "RUNNING"  # PENDING, RUNNING, RESTARTING, RESIZING, TERMINATING, TERMINATED, ERROR, UNKNOWN
    spark_version: str = "15.4.x-scala2.12"  # Python 3.11, like the local Job_B the fake runs
    data_security_mode: str | None = "SINGLE_USER"
    single_user_name: str | None = FAKE_USER
    spark_env_vars: dict[str, str] = field(default_factory=dict)
    cluster_name: str = "rlm fake cluster"


@dataclass
class Securable:
    owner: str = CATALOG_ADMIN
    grants: dict[str, set[str]] = field(default_factory=dict)  # principal -> privileges granted on this securable


@dataclass
class SecretScope:
    keys: set[str] = field(default_factory=set)
    readers: set[str] = field(default_factory=lambda: {FAKE_USER})  # principals with READ (or more) on the scope


def _mine(*privileges: str) -> dict[str, set[str]]:
    return {FAKE_USER: set(privileges)}


@dataclass
class WorkspaceObjects:
    user: str = FAKE_USER
    groups: list[str] = field(default_factory=lambda: ["users"])
    warehouses: dict[str, Warehouse] = field(default_factory=dict)
    clusters: dict[str, Cluster] = field(default_factory=lambda: {DEFAULT_CLUSTER: Cluster()})
    catalogs: dict[str, Securable] = field(
        default_factory=lambda: {"main": Securable(grants=_mine("USE_CATALOG"))})
    schemas: dict[str, Securable] = field(
        default_factory=lambda: {"main.rlm": Securable(grants=_mine("USE_SCHEMA", "CREATE_TABLE"))})
    volumes: dict[str, Securable] = field(
        default_factory=lambda: {"main.rlm.vol": Securable(grants=_mine("READ_VOLUME", "WRITE_VOLUME"))})
    tables: dict[str, Securable] = field(default_factory=dict)  # a fresh schema: the backend creates its tables
    # (object type as the permissions API spells it, id) -> principal -> permission level
    acls: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    # False: GET /api/2.0/permissions/... answers 403, as for a user without CAN MANAGE on the object
    acls_readable: bool = True
    # True: effective-permissions answers 403 unless filtered to the caller (principal=<user>)
    effective_permissions_self_only: bool = False
    secret_scopes: dict[str, SecretScope] = field(
        default_factory=lambda: {"rlm": SecretScope(keys={"google_api_key"})})

    def __post_init__(self) -> None:
        for warehouse_id in self.warehouses:
            self.acls.setdefault(("warehouses", warehouse_id), {self.user: "CAN_USE"})
        for cluster_id in self.clusters:
            self.acls.setdefault(("clusters", cluster_id), {self.user: "CAN_RESTART"})

    # --- the identity's view ---------------------------------------------------------------------------

    def principals(self) -> set[str]:
        """Who the token's user is, for a grant: itself, its groups, and ``account users``."""
        return {self.user, *self.groups, "account users"}

    def securables(self, kind: str) -> dict[str, Securable]:
        return {"catalog": self.catalogs, "schema": self.schemas, "volume": self.volumes, "table": self.tables}[kind]

    def lineage(self, kind: str, full_name: str) -> list[tuple[str, str]]:
        """``(kind, full_name)`` of the securable and its parents, itself first."""
        parts = full_name.split(".")
        chain = [(kind, full_name)]
        if kind in ("volume", "table"):
            chain.append(("schema", ".".join(parts[:2])))
        if kind != "catalog":
            chain.append(("catalog", parts[0]))
        return chain

    def exists(self, kind: str, full_name: str) -> bool:
        return full_name in self.securables(kind)

    def effective(self, kind: str, full_name: str) -> list[tuple[str, str, tuple[str, str] | None]]:
        """``(principal, privilege, inherited from (kind, name) or None)`` for every grant that reaches the securable."""
        found = []
        for index, (level_kind, name) in enumerate(self.lineage(kind, full_name)):
            securable = self.securables(level_kind).get(name)
            if securable is None:
                continue
            for principal, privileges in securable.grants.items():
                for privilege in sorted(privileges):
                    found.append((principal, privilege, None if index == 0 else (level_kind, name)))
        return found

    def holds(self, kind: str, full_name: str, privilege: str) -> bool:
        """Does the token's user hold ``privilege`` on the securable (owner, grant, inherited grant, ALL_PRIVILEGES)?"""
        mine = self.principals()
        securable = self.securables(kind).get(full_name)
        if securable is not None and securable.owner in mine:
            return True
        return any(p in mine and priv in (privilege, "ALL_PRIVILEGES") for p, priv, _ in self.effective(kind, full_name))
