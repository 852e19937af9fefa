"""Absence is a verdict: a mapped concept whose producing activity happened, but whose product is missing, fails.

Every registered check is in exactly one of two tables. ``OWED`` holds a trace for each check that judges a
product owed by an activity (an analysed execution owes a consumed mark, a finished turn a history entry, an
execution its preview, a delegation its execution ...): the activity happens, the product is left out, and the
check must *fail* naming it — never answer "n/a". ``PRESENCE`` says, for every other check, why it has no such
case: it judges what is present (a null, a temp: key, a transfer), so an empty trace is a pass or an honest n/a.
A new check must be added to one of them (``test_every_check_is_swept``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.checks import registered_checks, run_checks
from harness.checks.base import Status
from tests.harness.checks.trace_builder import TraceBuilder, make_context, make_scenario
from harness.trace.model import Trace


def _without_keys(trace: Trace, *names: str) -> Trace:
    """The same trace with ``names`` never emitted by any event (the target forgot to write them)."""
    for event in trace.events:
        for name in names:
            event.emitted_delta.pop(name, None)
    return trace


def _analysed_but_never_consumed() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.process(consume=False)
    b.exit_loop()
    b.end_turn()
    return b.build()


def _turn_never_folded() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.process()
    b.exit_loop()
    b.end_turn(fold_history=False)
    return b.build()


def _execution_without_preview() -> Trace:
    b = TraceBuilder()
    preview_keys = tuple(b.profile.preview_keys)
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.process()
    b.exit_loop()
    b.end_turn()
    return _without_keys(b.build(), *preview_keys)


def _delegation_never_executed() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.exit_loop()
    b.end_turn()
    return b.build()


def _execution_never_processed() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.exit_loop()
    b.end_turn()
    return b.build()


def _summary_never_written() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    processor = b.profile.results_processor
    b.request(processor, contents_text="EXECUTION RESULTS\n--- stdout ---\n1\n", response_text="It printed 1.")
    b.event(processor, text="It printed 1.")  # answered, but wrote no summary key
    b.exit_loop()
    b.end_turn()
    return b.build()


def _summary_never_reaches_the_next_prompt() -> Trace:
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.process("It printed 1.")
    b.request(b.profile.analyst, system_instruction="You are a data analyst.\n", response_calls=[b.profile.exit_tool])
    b.exit_loop()
    b.end_turn()
    return b.build()


def _flags_never_cleared() -> Trace:
    b = TraceBuilder()
    for question in ("first", "second"):
        b.start_turn(question, cleanup=False)
        b.delegate()
        b.execute(final_answer="1")
        b.process()
        b.end_turn()
    return b.build()


OWED: dict[str, tuple[Callable[[], Trace], str]] = {
    "artifacts_consumed": (_analysed_but_never_consumed, "expected 'consumed'"),
    "history_keeps_newest": (_turn_never_folded, "the history is never folded"),
    "previews_bounded": (_execution_without_preview, "none of 1 execution(s) emitted one"),
    "stage_gating": (_delegation_never_executed, "never executed"),
    "processor_model_runs": (_execution_never_processed, ""),
    "summary_persisted": (_summary_never_written, ""),
    "summary_reaches_prompt": (_summary_never_reaches_the_next_prompt, "'It printed 1.'"),
    "stale_flags_cleared": (_flags_never_cleared, ""),
}

PRESENCE = {
    "no_pruning_plugin": "judges the plugins the app has: a missing plugin is its pass",
    "no_temp_persisted": "judges temp: keys present in storage",
    "minimal_deltas": "judges the keys each delta carries against the state contract",
    "none_deletes": "judges null values present in storage",
    "no_unpersisted_mutation": "judges live-state values that no event explains",
    "state_budget": "judges the size of what is persisted",
    "instructions_render": "judges the instructions the agents have",
    "outcome_from_storage": "compares the outcome the target itself reports; an outcome the harness made up for a "
                            "target without its own driver has nothing to disagree with (n/a, says so)",
    "loop_without_transfers": "judges transfers present in the loop",
    "user_history_scoped": "its absence case (a user's own history missing from a later session) is "
                           "test_scope_checks::test_user_history_scoped_wants_the_users_own_history_in_a_later_session",
    "history_folded_by_event": "judges how present history writes were made; a history never written is "
                               "history_keeps_newest's failure (OWED)",
    "app_data_shared": "its absence case (app data missing from another user's prompt) is "
                       "test_scope_checks::test_app_data_shared_fails_when_the_prompt_or_storage_lacks_it",
    "context_budget": "judges the size of the prompts present",
    "sublm_batch_concurrent": "judges the timing of batches present",
    "executor_env_clean": "judges the environment an execution printed",
    "executor_confined": "judges escapes the harness observed",
    "stale_writer_rejected": "judges the contract probe's cases, each of which asserts its own outcome",
    "get_session_config_honoured": "judges the contract probe's cases",
    "event_order_preserved": "judges the contract probe's cases",
    "session_service_contract": "judges the contract probe's cases",
    "scenario_expectations": "a scenario's expected value that is missing fails as a mismatch (its own tests)",
    "adk_recording_matches": "compares every event and the final state with ADK's recording; an event or key "
                             "missing from the run is a difference (tests/importers/test_import_adk_conformance.py)",
}


def test_every_check_is_swept() -> None:
    assert set(OWED) | set(PRESENCE) == set(registered_checks())
    assert not set(OWED) & set(PRESENCE)


@pytest.mark.parametrize("name", sorted(OWED))
def test_a_missing_product_fails_the_check_that_owns_it(name: str) -> None:
    build, fragment = OWED[name]
    context = make_context(build(), scenario=make_scenario())
    [result] = run_checks(context, only=[name])
    text = result.explanation + "\n" + "\n".join(result.evidence)
    assert result.status is Status.FAIL, (result.status, text)
    assert fragment in text, text


def test_the_same_traces_with_the_product_pass() -> None:
    """The builders above differ from a passing trace only by the product they leave out."""
    b = TraceBuilder()
    for question in ("first", "second"):
        b.start_turn(question)
        b.delegate()
        b.execute(final_answer="1")
        b.process()
        b.end_turn()
    results: dict[str, Any] = {r.name: r for r in run_checks(make_context(b.build(), scenario=make_scenario()),
                                                              only=sorted(OWED))}
    assert {n: r.status for n, r in results.items() if r.failed} == {}
