"""The recovery ``resume``: the recovering process has ADK resume the invocation the crash interrupted.

ADK (1.x and 2.x alike) resumes an invocation only on a resumable App
(``App(resumability_config=ResumabilityConfig(is_resumable=True))``): ``Runner.run_async(invocation_id=...)`` with no
new message finds the invocation's user message in the session, rebuilds where each agent was from the
``agent_state`` / ``end_of_agent`` events the App wrote, runs a trailing function call the model made but no tool
answered, and carries on. The target says how it is driven so (``BuiltTarget.resume_turn``: the generic target's
when the profile names no ``driver``); without it, or on an App that is not resumable, the point is n/a naming
what is missing.

The harness drives the recovery's turns as always; ``resume_first_turn`` only swaps the crashed turn's run for the
resume of its invocation (the turns after it run as ``retry`` sends them).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..targets.base import BuiltTarget


@dataclass(frozen=True)
class Resume:
    """The invocation to resume: the crashed turn's, in its session (from the journal's acknowledged events)."""

    user_id: str
    session_id: str
    invocation_id: str


def cannot_resume(built: BuiltTarget) -> str | None:
    """Why ``built`` cannot resume an interrupted invocation (what is missing and the fix), or None."""
    config = getattr(built.app, "resumability_config", None)
    if not (config is not None and config.is_resumable):
        return (f"target {built.name!r}: its App {built.app.name!r} is not resumable, and ADK resumes an invocation "
                f"only on one (App(resumability_config=ResumabilityConfig(is_resumable=True))). Fix: make the App "
                f"resumable, or declare recovery: retry or next_turn in the target profile")
    if built.resume_turn is None:
        return (f"target {built.name!r} provides no resume_turn (BuiltTarget.resume_turn): its turns are driven by "
                f"its own function (the profile's driver, or the target factory's run_turn), which the harness "
                f"cannot hand an invocation id. Fix: give the BuiltTarget a resume_turn(runner, user_id, "
                f"session_id, invocation_id) calling Runner.run_async(invocation_id=...), or declare recovery: "
                f"retry or next_turn")
    return None


def resume_first_turn(built: BuiltTarget, resume: Resume) -> None:
    """Make ``built``'s first turn in ``resume``'s session the resume of its invocation; later turns run as they
    would. The wrapper keeps run_turn's signature (the runner reads it for ``state_delta``)."""
    run_turn, resume_turn = built.run_turn, built.resume_turn
    if resume_turn is None:
        raise ValueError(cannot_resume(built) or "no resume_turn")
    pending = [resume]

    @functools.wraps(run_turn)
    async def run_or_resume(runner: Any, user_id: str, session_id: str, message: str, **kwargs: Any) -> Any:
        if pending and (user_id, session_id) == (resume.user_id, resume.session_id):
            pending.clear()
            return await resume_turn(runner, user_id, session_id, resume.invocation_id)
        return await run_turn(runner, user_id, session_id, message, **kwargs)

    built.run_turn = run_or_resume
