"""outcome_from_storage judges a driver's reported outcome against the events when the profile maps no
termination or final-answer key (a team whose turn function reports the outcome, nothing stored under a key), and
reads a mapped user:/app: key from its own scope."""

from __future__ import annotations

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import TraceBuilder, make_context
from reference_agent.conformance.profile import reference_profile
from harness.trace.model import Trace, TurnOutcome

DRIVER = "driver team.run:run_conversation (termination from status, final_answer from response_text)"


def unkeyed_profile():
    return reference_profile().model_copy(update={"none_semantics": "delete", "termination_key": None,
                                                  "final_answer_key": None})


def run(trace: Trace, profile=None) -> CheckResult:
    [result] = run_checks(make_context(trace, profile=profile or unkeyed_profile()), only=["outcome_from_storage"])
    return result


def exit_loop(b: TraceBuilder) -> None:
    """The analyst calls its exit tool, which escalates (no termination key: the profile maps none)."""
    p = b.profile
    b.request(p.analyst, response_calls=[p.exit_tool])
    b.event(p.analyst, function_calls=[p.exit_tool])
    b.event(p.analyst, function_responses=[p.exit_tool], escalate=True)


def driven_turn(*, final: bool, reported: TurnOutcome) -> Trace:
    """One turn: a delegation whose code prints 200; the analyst exits the loop (``final``) or the loop runs out."""
    b = TraceBuilder(profile=unkeyed_profile())
    b.start_turn("Total sales?")
    b.delegate("print(200)")
    b.execute(stdout="200\n")
    b.process("The total is 200.")
    if final:
        exit_loop(b)
    b.end_turn(outcome=reported.model_copy(update={"reported_by": DRIVER}))
    return b.build()


def test_a_driver_reporting_a_final_answer_no_event_produced_fails() -> None:
    result = run(driven_turn(final=True, reported=TurnOutcome(termination="exit_loop", final_answer="350")))
    assert result.status is Status.FAIL, (result.status, result.explanation)
    assert "final_answer '350' but no event of the turn holds it" in "\n".join(result.evidence)


def test_a_driver_saying_final_when_the_loop_ran_out_fails() -> None:
    result = run(driven_turn(final=False, reported=TurnOutcome(termination="final_answer", final_answer="200")))
    assert result.status is Status.FAIL, (result.status, result.explanation)
    text = "\n".join(result.evidence)
    assert "termination 'final_answer' but no event of the turn escalated" in text and "max_iterations" in text


def test_a_driver_saying_max_iterations_after_an_escalation_fails() -> None:
    trace = driven_turn(final=True, reported=TurnOutcome(termination="max_iterations"))
    result = run(trace)
    escalated = next(e for e in trace.events if e.escalate)
    assert result.status is Status.FAIL
    assert f"event #{escalated.index}" in "\n".join(result.evidence)


def test_a_driver_whose_outcome_the_events_bear_out_passes() -> None:
    result = run(driven_turn(final=True, reported=TurnOutcome(termination="exit_loop", final_answer="200")))
    assert result.status is Status.PASS, (result.explanation, result.evidence)
    assert "matches the turn's events" in result.explanation
    result = run(driven_turn(final=False, reported=TurnOutcome(termination="max_iterations")))
    assert result.status is Status.PASS, (result.explanation, result.evidence)


def test_without_a_driver_or_a_key_it_stays_n_a() -> None:
    b = TraceBuilder(profile=unkeyed_profile())
    b.start_turn()
    exit_loop(b)
    b.end_turn(outcome=TurnOutcome(termination="exit_loop"))
    assert run(b.build()).status is Status.NOT_APPLICABLE


def test_a_user_scoped_final_answer_key_is_read_from_its_own_scope() -> None:
    profile = reference_profile().model_copy(update={"none_semantics": "delete", "final_answer_key": "user:answer",
                                                     "termination_key": None})
    b = TraceBuilder(profile=profile)
    b.start_turn()
    b.event(profile.analyst, delta={"user:answer": "42"})
    exit_loop(b)
    b.end_turn(outcome=TurnOutcome(termination="exit_loop", final_answer="42"))
    result = run(b.build(), profile)
    assert result.status is Status.PASS, (result.explanation, result.evidence)
