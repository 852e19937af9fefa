"""Contract case: concurrent runners — two processes running turns at once on one session service.

The other concurrency cases drive one service object from one event loop. This one starts two runner
processes that each build the service from the profile's ``spawn`` words (a built-in name or ``module:attr``,
as ``--session-service`` says it) on one folder — a double submit on one session, then two sessions of one
user — and judges their client-observed histories (``history_check.py``: no acknowledged write or ``user:``/
``app:`` update lost, every conflict an error the caller saw, no event lost or doubled; a minimal witness).

Not applicable, saying why, where a second process cannot reach the service: no ``spawn`` words (the run's own
instance), or a service that keeps nothing once its object is gone (in memory). A store that admits one
process at a time (DuckDB's file lock) is run as two runners in one process on one service object instead —
the way its deployment would share it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from google.adk.sessions.base_session_service import BaseSessionService

from ..targets.session_services import aclose_service
from .case import CaseNotApplicable, contract_case
from .profiles import BUILTIN_PROFILES, ServiceProfile, get_profile
from .runner_processes import run_processes
from .runners import run_tasks

_PROBE_APP, _PROBE_USER, _PROBE_SESSION = "concurrent-reach", "u", "reach"
_WITNESS_CHARS = 4000  # a failure's message: the first anomalies with their witnesses


def _build(spawn: str, folder: Path) -> BaseSessionService:
    """A fresh service from the spawn words, as a runner process builds it (never the instance under test, which
    its owner closes)."""
    return get_profile(spawn).build(folder)


async def _outlives_its_object(spawn: str, folder: Path) -> bool:
    """Whether a session created through one service object is read back through a second one built alike."""
    first = _build(spawn, folder)
    try:
        await first.create_session(app_name=_PROBE_APP, user_id=_PROBE_USER, session_id=_PROBE_SESSION)
    finally:
        await aclose_service(first)
    second = _build(spawn, folder)
    try:
        return await second.get_session(app_name=_PROBE_APP, user_id=_PROBE_USER,
                                        session_id=_PROBE_SESSION) is not None
    finally:
        await aclose_service(second)


@contract_case
async def concurrent_runners(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Two runner processes at once on one service: no acknowledged write or user:/app: update lost."""
    if not profile.spawn:
        raise CaseNotApplicable(
            f"{profile.name}: no built-in name or module:attr a second process could build it from (a scenario run "
            f"probes its own instance); run the contract suite on it — pytest with "
            f"make_contract_tests(profile_from_spec('pkg.module:factory'))")
    with tempfile.TemporaryDirectory(prefix="concurrent-runners-") as root:
        folder = Path(root)
        for sub in ("reach", "processes", "tasks"):
            (folder / sub).mkdir()
        # A built-in profile's service lives in its folder, so it can be asked here, saving two processes; a
        # user's factory may write elsewhere (a relative path): the runners find out (runner_processes.py).
        if profile.spawn in BUILTIN_PROFILES and not await _outlives_its_object(profile.spawn, folder / "reach"):
            raise CaseNotApplicable(
                f"{profile.name} keeps its sessions in its own object (a session created through one instance is "
                f"not found through another, as in memory): a second process cannot share it")
        result = await run_processes(profile.spawn, folder / "processes")
        said = ""
        if result.not_judged and "in memory" in result.not_judged:
            raise CaseNotApplicable(f"{profile.name}: {result.not_judged}")
        if result.not_judged:
            said = f" (two processes could not share it: {result.not_judged[:300]}; run as two runners in one process)"
            shared = _build(profile.spawn, folder / "tasks")
            try:
                result = await run_tasks(shared, profile.name)
            finally:
                await aclose_service(shared)
    if not result.overlapped:
        raise CaseNotApplicable(f"the runners on {profile.name} never ran at the same time{said}: nothing raced")
    text = result.describe()
    assert result.verdict.ok, f"concurrent runners on {profile.name}{said}: " + (
        text if len(text) <= _WITNESS_CHARS else text[:_WITNESS_CHARS] + " ...")
