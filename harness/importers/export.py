"""``rlm-conformance export evalset``: scenarios -> an ADK eval set that ADK's own loader reads and ``adk eval``
runs.

Each scenario is run once in scripted mode, keeping its sessions as the target's service returns them at the
end; ADK's own ``EvaluationGenerator.convert_events_to_eval_invocations`` turns each session's events into the
invocations of an ``EvalCase`` (user turns, tool trajectory with authors, final responses), as ``adk eval``
converts a session, less the invocations with no user message and nothing kept (what a target's own turn function
appends outside its agents' turns, e.g. a history fold: ADK's evaluator would send each as an empty user message,
which its runner refuses); the case's ``session_input`` is the state the session was created with (the scenario's
``initial_state`` and what the target seeds, e.g. the scenario's context under the profile's ``context_key``), its
``final_session_state`` the state it ended with, less what the run drew afresh: ids, wall-clock values and
temporary paths are rewritten as the snapshots write them (``<artifact:1>``, ``<redacted>``, ``<volume>``;
harness/snapshot/normalize.py), so the same scenarios export the same file, and ``import evalset`` leaves such keys
out of the expected state. A scenario that does not run cleanly — the run's error, a turn that raised undeclared,
a run that did not follow its script (a model call the script had no answer for, such as a sub-model call) — is
refused with that error; the others are exported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .evalset import Refusal, bookkeeping_invocation

if TYPE_CHECKING:
    from google.adk.evaluation.eval_set import EvalSet

    from ..result import ScenarioResult
    from ..run.options import RunOptions
    from ..scenario.models import Scenario


def export_eval_set(scenarios: Sequence[Scenario], options: RunOptions, *, eval_set_id: str,
                    log: Any = None) -> tuple[EvalSet, list[Refusal]]:
    from google.adk.evaluation.eval_case import EvalCase, SessionInput
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.sessions import Session

    from ..llm.modes import LlmMode
    from ..run.runner import run_scenario
    from ..snapshot.normalize import normalize_state

    options = dataclasses.replace(options, llm_mode=LlmMode.SCRIPTED, record=False, keep_adk_sessions=True)
    cases, refused = [], []
    for scenario in scenarios:
        result = run_scenario(scenario, options)
        problem = _not_clean(result)
        if problem is not None:
            refused.append(Refusal(f"scenario {scenario.name}", problem))
            if log is not None:
                log(scenario.name, result)
            continue
        several = len(scenario.sessions) > 1
        for index, spec in enumerate(scenario.sessions):
            dumped = result.trace.adk_sessions.get(scenario.session_id(index))
            if dumped is None:
                refused.append(Refusal(f"scenario {scenario.name}, session {index}", "the session service returned "
                                                                                      "no session at the end"))
                continue
            session = Session.model_validate(dumped)
            cases.append(EvalCase(
                eval_id=f"{scenario.name}_{index}" if several else scenario.name,
                conversation=[invocation for invocation in EvaluationGenerator.convert_events_to_eval_invocations(
                    session.events) if not bookkeeping_invocation(invocation)],
                session_input=SessionInput(app_name=session.app_name, user_id=session.user_id,
                                           state=result.trace.created_with.get(session.id, dict(spec.initial_state))),
                final_session_state=normalize_state(dict(session.state), result.trace)))
        if log is not None:
            log(scenario.name, result)
    return EvalSet(eval_set_id=eval_set_id, name=eval_set_id, description="Exported by rlm-conformance.",
                   eval_cases=cases), refused


def _not_clean(result: ScenarioResult) -> str | None:
    """Why ``result`` is no run to export (what the eval set would record is not what the scenario says), or None."""
    crashed = result.crashed_turns
    if result.error or result.trace is None:
        return result.error or "the run left no trace"
    if crashed:
        return f"turn {crashed[0].turn} raised {crashed[0].outcome.error or crashed[0].run_error}"
    script = result.check("script")
    if script is not None and script.failed:
        return f"the run did not follow its script: {script.evidence[0] if script.evidence else script.explanation}"
    return None
