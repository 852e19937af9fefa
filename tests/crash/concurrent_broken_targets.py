"""A broken variant of the reference agent for the concurrent case (tests/crash/test_concurrent.py):

* ``swallows_conflicts``: a turn whose append the store refused (another runner came first) reports success, its
  error dropped — the user is told the message was handled while the store kept nothing of the turn's end.
"""

from __future__ import annotations

from typing import Any

from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.trace.model import TurnOutcome
from reference_agent.conformance.reference import build_reference


def swallows_conflicts(env: TargetEnvironment) -> BuiltTarget:
    built = build_reference(env)
    inner = built.run_turn

    async def run_turn(runner: Any, user_id: str, session_id: str, message: str, **kwargs: Any) -> TurnOutcome:
        try:
            outcome = await inner(runner, user_id, session_id, message, **kwargs)
        except Exception:  # noqa: BLE001 - the defect: the caller never hears of it
            return TurnOutcome(termination="exit_loop")
        return outcome.model_copy(update={"error": None, "crash": None, "termination": "exit_loop"})

    built.run_turn = run_turn
    built.name = "swallows_conflicts"
    return built
