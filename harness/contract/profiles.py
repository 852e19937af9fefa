"""Service profiles: what a session service declares about itself, and the one table of divergences.

A ``ServiceProfile`` names a ``BaseSessionService`` factory and the behaviour it
*declares* where the contract allows a choice (None deletes or is stored,
``get_user_state`` supported). Everything else a service does differently from
the contract is a *declared divergence*, and all of the harness's built-in ones
live in ``DECLARED_DIVERGENCES`` below — nowhere else. A divergence key is:

* a contract case name (``stale_writer_rejected`` ...): that case becomes
  ``xfail(strict=True)`` for the service, so whoever fixes it must delete the entry;
* ``none_deletes``: the service stores ``None`` instead of deleting the key. Its
  profile then declares ``none_semantics="store"`` and the differential run
  reports None-vs-absent differences as declared.

Profiles of users' services carry their own ``divergences`` mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from adk_compat import ADK_LINE_SERVICE_DIVERGENCES, ADK_SERVICES_HAVE_GET_USER_STATE
from google.adk.sessions.base_session_service import BaseSessionService

from ..targets.session_services import (
    SessionServiceError,
    adk_memory,
    adk_sqlite,
    call_factory,
    import_factory,
)

NoneSemantics = Literal["delete", "store"]
NONE_DELETES = "none_deletes"
STALE_WRITER_REJECTED = "stale_writer_rejected"
# Keys of DECLARED_DIVERGENCES that the differential run can attribute a difference to.
DIVERGENCE_KINDS: dict[str, str] = {
    NONE_DELETES: "a key is None in one service and absent in the other (None stored instead of deleted)",
    STALE_WRITER_REJECTED: "a stale writer's append was accepted where the other service raised StaleSessionError",
}

# service name -> {contract case or divergence kind -> why}. The only place divergences are declared.
DECLARED_DIVERGENCES: dict[str, dict[str, str]] = {
    "adk-memory": {
        NONE_DELETES: "ADK's contract stores None in state (State has no delete); DeltaSessionService deletes the key.",
        STALE_WRITER_REJECTED: "InMemorySessionService has no storage revision: a stale writer's append is "
                               "accepted (merged into storage) instead of raising StaleSessionError.",
    },
    "adk-sqlite": {
        NONE_DELETES: "ADK's contract stores None in state (State has no delete); DeltaSessionService deletes the key.",
        "concurrent_scoped_writes": "DatabaseSessionService on SQLite locks per session only and rewrites the whole "
                                    "user:/app: JSON row: concurrent appends from two sessions of one user lose "
                                    "scoped keys (no row locks on SQLite).",
        "concurrent_runners": "DatabaseSessionService on one SQLite file, two runner processes: a runner's "
                              "read-modify-write of a user:/app: key built on a stale load is accepted over the "
                              "other session's, losing an acknowledged update (no check of scoped keys; "
                              "google/adk-python #4751, #5244). Measured in docs/session-store.md.",
    },
}

# The ADK line installed adds its own rows (adk_compat: e.g. ADK 1.x's services raise ValueError, not
# SessionNotFoundError), so a team moving between ADK 1.x and 2.x sees here exactly what ADK changed.
for _name, _rows in ADK_LINE_SERVICE_DIVERGENCES.items():
    DECLARED_DIVERGENCES.setdefault(_name, {}).update(_rows)


class ContractError(SessionServiceError):
    """A profile or ``module:factory`` the contract suite cannot use; the message names it and the fix."""


@dataclass(frozen=True)
class ServiceProfile:
    """A session service under test: how to build one, and what it declares."""

    name: str
    factory: Callable[[Path], BaseSessionService] = field(repr=False)
    none_semantics: NoneSemantics = "delete"
    supports_get_user_state: bool = True
    divergences: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    # How another process builds this service: a built-in profile name or ``module:attr`` (the concurrent
    # runners' case starts two); None: only this process can (e.g. a run's own instance).
    spawn: str | None = None

    def __post_init__(self) -> None:
        if self.none_semantics not in ("delete", "store"):
            raise ContractError(f"profile {self.name!r}: none_semantics={self.none_semantics!r}; use 'delete' or 'store'.")
        if NONE_DELETES in self.divergences and self.none_semantics != "store":
            raise ContractError(f"profile {self.name!r} declares divergence {NONE_DELETES!r} (None is stored) but "
                                f"none_semantics='delete'. Set none_semantics='store' or drop the declaration.")

    @property
    def detects_stale_writes(self) -> bool:
        return STALE_WRITER_REJECTED not in self.divergences

    def declared(self, key: str) -> str | None:
        """Why this service may differ on ``key`` (a case or divergence kind), or None if it may not."""
        if key == NONE_DELETES and self.none_semantics == "store":
            return self.divergences.get(key, f"{self.name} declares none_semantics='store'")
        return self.divergences.get(key)

    def build(self, folder: Path) -> BaseSessionService:
        return call_factory(self.name, self.factory, Path(folder), flag="session-service profile")


def _builtin(name: str, factory: Callable[[Path], BaseSessionService], description: str) -> ServiceProfile:
    divergences = DECLARED_DIVERGENCES.get(name, {})
    return ServiceProfile(name=name, factory=factory, divergences=divergences, description=description, spawn=name,
                          none_semantics="store" if NONE_DELETES in divergences else "delete",
                          supports_get_user_state=not name.startswith("adk-") or ADK_SERVICES_HAVE_GET_USER_STATE)


def _delta_memory(folder: Path) -> BaseSessionService:
    # The reference agent's service: a target plugin brings it (harness/targets/plugins.py), loaded only when used.
    from ..targets.plugins import plugin_session_services

    return plugin_session_services()["delta"](None)


def _delta_file(folder: Path) -> BaseSessionService:
    from ..targets.plugins import plugin_session_services

    return plugin_session_services()["delta"](Path(folder) / "sessions.duckdb")


BUILTIN_PROFILES: dict[str, ServiceProfile] = {
    profile.name: profile
    for profile in (
        _builtin("delta", _delta_memory, "DeltaSessionService on in-memory DuckDB"),
        _builtin("delta-file", _delta_file, "DeltaSessionService on a DuckDB file"),
        _builtin("adk-memory", adk_memory, "ADK InMemorySessionService"),
        _builtin("adk-sqlite", adk_sqlite, "ADK DatabaseSessionService on sqlite+aiosqlite"),
    )
}


def profile_from_spec(spec: str) -> ServiceProfile:
    """``module:attr`` naming a ServiceProfile or a factory (no argument, or a folder) -> a profile.

    A bare factory gets the contract's defaults: None deletes, no declared divergences.
    """
    obj = import_factory(spec, flag="session-service")
    if isinstance(obj, ServiceProfile):
        return obj if obj.spawn else replace(obj, spawn=spec)
    if not callable(obj):
        raise ContractError(f"session-service {spec!r} names a {type(obj).__name__}; name a factory or a "
                            f"harness.contract.ServiceProfile.")
    return ServiceProfile(name=spec, factory=obj, description=f"user factory {spec}", spawn=spec)


def get_profile(name: str) -> ServiceProfile:
    """A built-in profile by name, or ``profile_from_spec`` for ``module:factory``."""
    if name in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[name]
    if ":" not in name:
        raise ContractError(f"session service {name!r} is unknown. Use one of {', '.join(BUILTIN_PROFILES)} "
                            f"or 'package.module:factory'.")
    return profile_from_spec(name)
