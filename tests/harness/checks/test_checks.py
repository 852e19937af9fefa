"""Every check passes on a reference-like trace and fails, naming the culprit, on a broken one."""

from __future__ import annotations

import pytest

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import TraceBuilder, happy_trace, make_context, make_scenario, two_turn_trace
from reference_agent.conformance.profile import reference_profile
from harness.trace.model import Trace, TurnOutcome
from reference_agent import state_contract as keys


def run(name: str, trace: Trace, **kwargs) -> CheckResult:
    [result] = run_checks(make_context(trace, **kwargs), only=[name])
    assert result.name == name
    return result


def assert_pass(result: CheckResult) -> None:
    assert result.status is Status.PASS, (result.explanation, result.evidence)


def assert_fail(result: CheckResult, *fragments: str) -> str:
    assert result.status is Status.FAIL, (result.explanation, result.evidence)
    text = "\n".join(result.evidence)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in evidence:\n{text}"
    return text


def assert_na(result: CheckResult, fragment: str = "") -> None:
    assert result.status is Status.NOT_APPLICABLE, (result.explanation, result.evidence)
    assert fragment in result.explanation


def test_reference_like_traces_pass_every_check() -> None:
    for trace in (happy_trace(), two_turn_trace()):
        results = run_checks(make_context(trace))
        failures = [(r.name, r.explanation, r.evidence) for r in results if r.failed]
        assert not failures


# --- (a) no_pruning_plugin -------------------------------------------------------


def test_no_pruning_plugin() -> None:
    assert_pass(run("no_pruning_plugin", happy_trace()))
    trace = happy_trace()
    trace.plugins.append("RlmContextPruningPlugin")
    trace.plugins.append("MyOwnPruningPlugin")
    assert_fail(run("no_pruning_plugin", trace),
                "plugin #2 'RlmContextPruningPlugin'", "plugin #3 'MyOwnPruningPlugin'")


# --- (b) summary_persisted -------------------------------------------------------


def processor_without_output_key(b: TraceBuilder, summary: str = "It printed 1.") -> None:
    b.request(b.profile.results_processor, contents_text="EXECUTION RESULTS", response_text=summary)
    b.event(b.profile.results_processor, text=summary)
    b.event(b.profile.results_processor, delta={keys.STAGE: keys.STAGE_PROCESSED})


def test_summary_persisted_passes_and_is_na_without_execution() -> None:
    assert_pass(run("summary_persisted", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    assert_na(run("summary_persisted", b.build()), "No execution")


def test_summary_persisted_fails_when_processor_has_no_output_key() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    execution = b.execute()
    processor_without_output_key(b)
    b.exit_loop()
    b.end_turn()
    assert_fail(run("summary_persisted", b.build()), f"event #{execution.index} (author job_builder",
                "persisted row seq 4 (author job_builder", "'rlm:last_results_summary'")


def test_summary_persisted_fails_when_another_author_wrote_it() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    processor_without_output_key(b)
    b.event(b.profile.run_conversation_author, delta={b.profile.summary_key: "copied"})
    b.exit_loop()
    b.end_turn()
    assert_fail(run("summary_persisted", b.build()), "only in rows by other authors: seq 7 (author run_conversation)")


def test_summary_persisted_fails_when_event_was_never_persisted() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    b.request(b.profile.results_processor, response_text="sum")
    b.event(b.profile.results_processor, text="sum", delta={b.profile.summary_key: "sum"}, persist=False)
    b.end_turn()
    assert_fail(run("summary_persisted", b.build()), "no results_processor row after persisted row seq 4")


# --- (c) no_temp_persisted -------------------------------------------------------


def test_no_temp_persisted() -> None:
    assert_pass(run("no_temp_persisted", happy_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    leaky = {keys.STAGE: keys.STAGE_EXECUTED, keys.LAST_EXECUTION_SUCCESS: True}
    event = b.event(b.profile.job_builder, delta=leaky, appended_delta=leaky)  # a service that forgot to strip
    b.end_turn()
    assert_fail(run("no_temp_persisted", b.build()),
                f"event #{event.index} (author job_builder",
                "persisted row seq 4 (author job_builder",
                "persisted snapshot of session s1 after turn 0: session_state holds 'temp:rlm:stage'")


# --- (d) stage_gating ------------------------------------------------------------


def test_stage_gating_passes_with_expected_executions() -> None:
    assert_pass(run("stage_gating", two_turn_trace(), scenario=make_scenario(executions=2)))


def test_stage_gating_names_the_stale_rerun() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    b.process("It printed 1.")
    b.analyst_text()  # no fresh delegation...
    rerun = b.execute()  # ...but job_builder runs Job_B again on stale glue
    reprocess = b.process("It printed 1 again.")
    b.exit_loop()
    b.end_turn()
    text = assert_fail(run("stage_gating", b.build(), scenario=make_scenario(executions=1)),
                       f"event #{rerun.index} (author job_builder", "stale trigger",
                       "expects 1 execution(s) (expect.executions); the trace has 2")
    assert f"event #{reprocess.index}" not in text  # the re-run consumed its own execution


def test_stage_gating_names_an_extra_processor_run_and_an_unexecuted_delegation() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    b.process("once")
    b.analyst_text()
    again = b.process("twice")  # the processor re-runs on stale stage glue
    lost = b.delegate("print(2)")  # a delegation job_builder never picks up
    b.analyst_text("giving up")
    b.end_turn()
    trace = b.build()
    delegation_event = next(e for e in trace.events if e.function_responses and e.emitted_delta.get(
        keys.ARTIFACT_ID) == lost.artifact_id)
    assert_fail(run("stage_gating", trace), f"event #{again.index} (author results_processor",
                "ran again without a new execution", f"event #{delegation_event.index} (author databricks_analyst",
                "never executed", "sent 2 model requests")


def test_stage_gating_says_what_a_processor_run_with_nothing_to_process_overwrote() -> None:
    """A gate that answers with text (a skip callback returning a message) is a run: ADK saves the text under the
    processor's output_key. The evidence says it ran with no execution (not "again": it is the turn's first) and
    that it wrote the summary key, which is where the damage is."""
    p = reference_profile()
    b = TraceBuilder()
    b.start_turn()
    b.analyst_text("Nothing to run.")
    skip = b.event(p.results_processor, text="Skipped: nothing new.", delta={p.summary_key: "Skipped: nothing new."})
    b.exit_loop()
    b.end_turn()
    text = assert_fail(run("stage_gating", b.build()), f"event #{skip.index} (author results_processor",
                       "results_processor ran without a new execution before it in turn 0",
                       f"it wrote {p.summary_key!r} all the same (event #{skip.index}")
    assert "ran again" not in text


# --- (e) artifacts_consumed ------------------------------------------------------


def test_artifacts_consumed_passes_and_is_na_without_registry() -> None:
    assert_pass(run("artifacts_consumed", two_turn_trace()))
    trace = happy_trace()
    trace.executions.clear()
    assert_na(run("artifacts_consumed", trace), "no execution records")


def test_artifacts_consumed_fails_when_analysed_artifact_stays_executed() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    execution = b.execute()
    b.process(consume=False)
    b.exit_loop()
    b.end_turn()
    assert_fail(run("artifacts_consumed", b.build()), "artifact art001 (session s1, iteration 1): status 'executed'",
                f"execution event #{execution.index} (author job_builder")


def test_artifacts_consumed_fails_when_consumed_without_analysis() -> None:
    b = TraceBuilder()
    b.start_turn()
    record = b.delegate()
    execution = b.execute()
    record.status = "consumed"  # executor-consumed semantics: not what the reference declares
    b.exit_loop()
    b.end_turn()
    assert_fail(run("artifacts_consumed", b.build()), "artifact art001", "status 'consumed' but no results_processor",
                f"event #{execution.index}")


# --- (f) minimal_deltas ----------------------------------------------------------


def test_minimal_deltas_whole_state_delta() -> None:
    assert_pass(run("minimal_deltas", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    # dict(ctx.session.state) in a later round: the keys of the round before come with it (the results processor's)
    earlier = {keys.LAST_RESULTS_SUMMARY: "Total: 200.", keys.LAST_ARTIFACT_ID: "a-1",
               keys.LAST_RESULT_JSON_PATH: "/v/a-1.json", keys.USER_HISTORY: [{"question": "Total?"}]}
    whole = dict(b.live) | earlier | {keys.STAGE: keys.STAGE_EXECUTED, keys.EXECUTION_STDOUT: "1\n"}
    event = b.event(b.profile.job_builder, delta=whole)
    b.end_turn()
    assert_fail(run("minimal_deltas", b.build()), f"event #{event.index} (author job_builder",
                "looks like a whole-state delta")


def test_minimal_deltas_single_foreign_and_unknown_keys() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    event = b.event(b.profile.job_builder, delta={keys.ITERATION: 1, "rlm:execution_stdout": "legacy",
                                                  keys.STAGE: keys.STAGE_EXECUTED})
    b.end_turn()
    assert_fail(run("minimal_deltas", b.build()),
                f"event #{event.index} (author job_builder, invocation e-",
                "key 'rlm:iteration' not owned by job_builder (contract writers: delegate_code_results)",
                "key 'rlm:execution_stdout' is not in the state contract")


# --- (g) none_deletes ------------------------------------------------------------


def storing_trace() -> Trace:
    """Two turns on a service that stores None (ADK's own semantics)."""
    b = TraceBuilder(profile=reference_profile().model_copy(update={"none_semantics": "store"}))
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    b.start_turn("again")
    b.exit_loop()
    b.end_turn()
    return b.build()


def test_none_deletes() -> None:
    assert_pass(run("none_deletes", two_turn_trace()))
    assert_fail(run("none_deletes", storing_trace()),
                "persisted row seq 5 (author run_conversation", "state_delta stores null for 'rlm:exit_requested'")


def test_none_deletes_declared_divergence() -> None:
    result = run("none_deletes", storing_trace(), profile=reference_profile().model_copy(update={"none_semantics": "store"}))
    assert_na(result, "stores None as a value")


def test_none_deletes_flags_null_in_stored_state() -> None:
    trace = happy_trace()
    trace.persisted[-1].session_state["rlm:fatal_error"] = None
    assert_fail(run("none_deletes", trace),
                "persisted snapshot of session s1 after turn 0: session_state stores 'rlm:fatal_error' = null")


def as_reloaded(trace: Trace) -> Trace:
    """``trace`` as a service without row access shows it (a fresh get_session): each event keeps its delta as
    appended, a delete included as ``{key: None}`` (ADK's events do; there is no deleted_keys)."""
    for snapshot in trace.persisted:
        snapshot.source = "reload"
        for row in snapshot.events:
            row.state_delta = {**row.state_delta, **{k: None for k in row.deleted_keys}}
            row.deleted_keys = []
    return trace


def test_none_deletes_reads_a_reloaded_events_none_as_the_delete_when_storage_lacks_the_key() -> None:
    """Issue 51: on a service that deletes on None, the None its stored event keeps was "a delete belongs in
    deleted_keys"; storage's state, which does not hold the key, says the delete happened."""
    trace = as_reloaded(two_turn_trace())
    last = trace.persisted[-1]
    last.events[-1].state_delta["rlm:scratch"] = None  # the turn's last write deletes a key storage lacks
    result = run("none_deletes", trace)
    assert_pass(result)
    assert "3 None value(s) in stored events' deltas are deletes" in result.explanation
    last.session_state["rlm:scratch"] = None  # the service kept the null after all: still a finding
    assert_fail(run("none_deletes", trace), "session_state stores 'rlm:scratch' = null")
    # A service known to store None (ADK's DatabaseSessionService where the profile asks delete): the null it
    # stored at turn 1's cleanup, set again later in the turn, shows only in the event's delta.
    stored = as_reloaded(two_turn_trace())
    stored.service_semantics = {"none_behaviour": "store"}
    assert_fail(run("none_deletes", stored), "state_delta stores null for 'rlm:exit_requested'",
                "stores None as a value")


def test_none_deletes_leaves_a_null_the_scenario_planted_to_the_harness() -> None:
    """Issue 51: explore plants ``explore_cleared: null`` in a starting state; that null is the harness's."""
    trace = happy_trace()
    trace.created_with["s1"] = {"explore_cleared": None}
    trace.persisted[-1].session_state["explore_cleared"] = None
    result = run("none_deletes", trace)
    assert_pass(result)
    assert "'explore_cleared'" in result.explanation and "initial_state" in result.explanation
    # The agent writing None to that key itself, and storage keeping the null: the agent's finding again.
    trace.persisted[-1].events[-1].deleted_keys.append("explore_cleared")
    assert_fail(run("none_deletes", trace), "session_state stores 'explore_cleared' = null")


def test_none_deletes_says_where_the_semantics_came_from() -> None:
    """Issue 51: the message said "the profile says none_semantics: delete" where only the class attribute did."""
    trace = storing_trace()
    said = "the service class's attribute OwnSessions.none_semantics = 'delete'"
    trace.service_semantics = {"none_semantics": said}
    result = run("none_deletes", trace)
    assert result.failed and said in result.explanation and "the profile says" not in result.explanation
    trace.service_semantics = {}  # a trace that does not say: the profile's field, by name
    assert "none_semantics: delete" in run("none_deletes", trace).explanation
    stored = storing_trace()
    stored.service_semantics = {"none_semantics": "a probe of OwnSessions (None written, then read back)"}
    result = run("none_deletes", stored, profile=reference_profile().model_copy(update={"none_semantics": "store"}))
    assert_na(result, "a probe of OwnSessions")
    assert "ADK's contract" not in result.explanation


# --- (h) no_unpersisted_mutation -------------------------------------------------


def test_no_unpersisted_mutation() -> None:
    assert_pass(run("no_unpersisted_mutation", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.live[keys.EXIT_REQUESTED] = False  # ctx.session.state[...] = ... : visible, never persisted
    b.live["rlm:notes"] = "x" * 200
    b.exit_loop()
    b.live[keys.EXIT_REQUESTED] = False
    b.end_turn()
    text = assert_fail(run("no_unpersisted_mutation", b.build()),
                       "live state of session s1 at the end of turn 0 (invocation e-",
                       "key 'rlm:exit_requested' is False in memory but True in storage",
                       "key 'rlm:notes' is 'xxx")
    notes = next(line for line in text.splitlines() if "rlm:notes" in line)
    assert "… in memory but <absent> in storage" in notes and "x" * 81 not in notes


def test_no_unpersisted_mutation_ignores_temp_keys() -> None:
    trace = happy_trace()
    trace.live_states[0].state["temp:rlm:stage"] = "processed"
    assert_pass(run("no_unpersisted_mutation", trace))


# --- (i) summary_reaches_prompt --------------------------------------------------


def test_summary_reaches_prompt_passes_and_is_na_without_processor() -> None:
    assert_pass(run("summary_reaches_prompt", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.analyst_text()
    b.exit_loop()
    b.end_turn()
    assert_na(run("summary_reaches_prompt", b.build()), "No databricks_analyst request follows")


def test_summary_reaches_prompt_owes_no_summary_after_a_gated_processor() -> None:
    """A processor its callback skipped leaves an empty event (no model call, no text): it did not run, so the
    analyst's next request owes no summary. A run that answered without writing one still fails."""
    p = reference_profile()

    def turn(processor_text: str) -> Trace:
        b = TraceBuilder()
        b.start_turn()
        b.analyst_text("Nothing to run; the answer is in the data.")
        b.event(p.results_processor, text=processor_text)
        b.analyst_text("Still nothing to run.")
        b.exit_loop()
        b.end_turn()
        return b.build()

    assert_na(run("summary_reaches_prompt", turn("")), "No databricks_analyst request follows")
    trace = turn("I summarised nothing.")
    assert_fail(run("summary_reaches_prompt", trace), f"request #{trace.requests_of(p.analyst)[1].index}",
                "follows a results_processor run, but no 'rlm:last_results_summary' was written")


def test_summary_reaches_prompt_fails_on_verbatim_placeholder() -> None:
    trace = happy_trace()
    after = trace.requests_of("databricks_analyst")[1]
    after.system_instruction = "You are a data analyst.\nLast results: {rlm:last_results_summary?}\n"
    assert_fail(run("summary_reaches_prompt", trace),
                f"request #{after.index} (agent databricks_analyst", "'It printed 1.'",
                "persisted row seq 5 (author results_processor")


def test_summary_reaches_prompt_long_summary_needs_only_its_head() -> None:
    long = "The table has these columns: " + "col, " * 150
    trace = happy_trace(summary=long)
    request = trace.requests_of("databricks_analyst")[1]
    request.system_instruction = "Results:\n" + long.strip()[:200] + " [cut]"
    assert_pass(run("summary_reaches_prompt", trace))


def test_summary_reaches_prompt_uses_the_latest_summary() -> None:
    trace = two_turn_trace()
    last = trace.requests_of("databricks_analyst")[-1]
    last.system_instruction = last.system_instruction.replace("It printed 2.", "It printed 1.")
    assert_fail(run("summary_reaches_prompt", trace), f"request #{last.index}", "'It printed 2.'", "seq 15")


# --- (j) state_budget ------------------------------------------------------------


def test_state_budget() -> None:
    assert_pass(run("state_budget", happy_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute(stdout="y" * 400)  # in temp: only: does not count
    b.process("z" * 300)
    b.exit_loop()
    b.end_turn()
    assert_fail(run("state_budget", b.build(), scenario=make_scenario(state_budget_bytes=250)),
                "persisted snapshot of session s1 after turn 0: session_state is",
                "persisted row seq 5 (author results_processor", "largest key 'rlm:last_results_summary'")


# --- (k) stale_flags_cleared -----------------------------------------------------


def test_stale_flags_cleared_is_na_for_single_turns() -> None:
    assert_na(run("stale_flags_cleared", happy_trace()), "No session has two turns")


def test_stale_flags_not_cleared_names_the_flag_and_first_agent_event() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    b.start_turn("again", cleanup=False)  # the legacy runner mutated the fetched session instead
    first = b.exit_loop()
    b.end_turn()
    trace = b.build()
    first_agent = next(e for e in trace.events if e.turn == 1 and e.author == "databricks_analyst")
    assert first.index > first_agent.index
    assert_fail(run("stale_flags_cleared", trace),
                "session s1 turn 1: flag 'rlm:exit_requested' (= True persisted after turn 0)",
                f"before the first agent event event #{first_agent.index} (author databricks_analyst")


def test_stale_flags_cleared_too_late() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    b.start_turn("again", cleanup=False)
    b.analyst_text()
    late = b.event("system", delta={keys.EXIT_REQUESTED: False, keys.TERMINATION_REASON: None})
    b.exit_loop()
    b.end_turn()
    assert_fail(run("stale_flags_cleared", b.build()), f"only cleared later, by event #{late.index} (author system")


def test_stale_flags_cleared_by_any_non_agent_author_with_falsy_values() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    b.start_turn("again", cleanup=False)
    b.trace.events.pop()  # re-append the user event after a "system" cleanup
    b.event("system", delta={keys.EXIT_REQUESTED: False, keys.TERMINATION_REASON: ""},
            invocation_id="cleanup-system")
    b.event("user", text="again")
    b.exit_loop()
    b.end_turn()
    assert_pass(run("stale_flags_cleared", b.build()))


# --- processor_model_runs ----------------------------------------------------------


def test_processor_model_runs_passes_and_is_na_without_execution() -> None:
    assert_pass(run("processor_model_runs", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    assert_na(run("processor_model_runs", b.build()))


def test_processor_skipped_by_before_agent_callback() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    execution = b.execute()
    injected = "EXECUTION RESULTS\n--- stdout ---\n1\n"
    b.event(b.profile.results_processor, text=injected, delta={b.profile.summary_key: injected})  # no model call
    b.exit_loop()
    b.end_turn()
    assert_fail(run("processor_model_runs", b.build()),
                f"event #{execution.index} (author job_builder", "sent no model request after this execution",
                "persisted row seq 5 (author results_processor", "the agent was skipped")


def test_processor_summary_differs_from_model_answer() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    request = b.request(b.profile.results_processor, response_text="The model said this.")
    b.event(b.profile.results_processor, text="The model said this.",
            delta={b.profile.summary_key: "Something else was stored."})
    b.exit_loop()
    b.end_turn()
    assert_fail(run("processor_model_runs", b.build()), "'Something else was stored.'",
                f"request #{request.index} (agent results_processor", "'The model said this.'")


def test_processor_answer_compared_whitespace_stripped() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    b.request(b.profile.results_processor, response_text="  Sum is 3.\n")
    b.event(b.profile.results_processor, text="  Sum is 3.\n", delta={b.profile.summary_key: "Sum is 3."})
    b.exit_loop()
    b.end_turn()
    assert_pass(run("processor_model_runs", b.build()))


def test_an_execution_that_ends_the_loop_is_not_held_against_the_processor() -> None:
    """An executor that escalates on FINAL ends ADK's LoopAgent before the processor's turn: the shape the brief
    prescribes and init infers. It failed 'sent no model request' on a healthy agent (a newcomer's report)."""
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    execution = b.execute(final_answer="42")
    ended = b.event(b.profile.job_builder, escalate=True)
    b.end_turn()
    result = run("processor_model_runs", b.build())
    assert_na(result, "ended the loop before results_processor's turn came")
    assert f"the loop ended at event #{ended.index} (author job_builder" in result.explanation
    assert f"event #{execution.index}" in result.explanation

    b = TraceBuilder()  # processed once, then an execution that ends the loop: the first is judged, the second not
    b.start_turn()
    b.delegate()
    b.execute()
    b.process()
    b.delegate()
    b.execute(final_answer="42")
    b.event(b.profile.job_builder, escalate=True)
    b.end_turn()
    result = run("processor_model_runs", b.build())
    assert_pass(result)
    assert "After each of 1 execution(s)" in result.explanation and "1 more ended the loop" in result.explanation


def test_a_processor_passed_by_before_the_loop_ends_still_fails() -> None:
    """The exemption needs the escalation before the next iteration: a processor that never ran, followed by the
    analyst's exit_loop in the next iteration, is still a processor that did not summarise."""
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    execution = b.execute()
    b.exit_loop()  # the analyst escalates: a new iteration had begun
    b.end_turn()
    assert_fail(run("processor_model_runs", b.build()), f"event #{execution.index} (author job_builder",
                "sent no model request after this execution")


def test_a_preview_key_written_as_a_dict_is_said_not_to_be_text() -> None:
    """preview_keys naming a key the agent writes as a dict ({stdout, error, final}) said "no event wrote 'result'"
    though every execution did (two newcomers' reports): now the check says the value is no text, and how to map it."""
    profile = reference_profile().model_copy(update={"preview_keys": {"result": "stdout"}, "preview_chars": 100})
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    written = b.event(b.profile.job_builder, delta={"result": {"stdout": "1\n", "error": None}})
    b.process()
    b.end_turn()
    result = run("previews_bounded", b.build(), profile=profile)
    assert_na(result, f"event #{written.index} (author job_builder")
    assert "wrote 'result' as a dict" in result.explanation and "Fix: map preview_keys" in result.explanation


# --- instructions_render -----------------------------------------------------------


def test_instructions_render() -> None:
    assert_pass(run("instructions_render", two_turn_trace()))
    trace = happy_trace()
    analyst = next(a for a in trace.agents if a.name == "databricks_analyst")
    analyst.instruction_kind = "string"  # ADK templates a string instruction; a provider's text is not templated
    request = trace.requests_of("databricks_analyst")[1]
    request.system_instruction += "\nLast: {rlm:last_results_summary?}\nQuery {tbl} with {+app:x}. JSON {\"a\": 1}"
    trace.turns[0].outcome.error = "KeyError: 'Context variable not found: `row`.'"
    text = assert_fail(run("instructions_render", trace),
                       f"request #{request.index} (agent databricks_analyst",
                       "{rlm:last_results_summary?}", "{tbl}", "{+app:x}",
                       "turn 0 (session s1): outcome.error", "Context variable not found")
    assert '{"a"' not in text


# --- outcome_from_storage ----------------------------------------------------------


def test_outcome_from_storage() -> None:
    assert_pass(run("outcome_from_storage", two_turn_trace()))
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute(final_answer="42")
    b.process("The answer is 42.")
    b.end_turn(outcome=TurnOutcome(termination="success", final_answer=None, delegations=0))
    assert_fail(run("outcome_from_storage", b.build()),
                "turn 0 (session s1): outcome.termination is 'success' but the persisted 'rlm:termination_reason' "
                "is 'final_answer'",
                "outcome.final_answer is None but the persisted 'rlm:final_answer' is '42'",
                "outcome.delegations is 0 but the turn's events hold 1 delegate_code_results call(s)")


def test_outcome_from_storage_na_without_termination() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn(outcome=TurnOutcome())
    assert_na(run("outcome_from_storage", b.build()), "no termination")


# --- loop_without_transfers --------------------------------------------------------


def test_loop_without_transfers() -> None:
    assert_pass(run("loop_without_transfers", happy_trace()))
    b = TraceBuilder()
    b.start_turn()
    call = b.event("databricks_analyst", function_calls=["transfer_to_agent"])
    transfer = b.event("databricks_analyst", function_responses=["transfer_to_agent"], transfer_to_agent="job_builder")
    b.end_turn()
    assert_fail(run("loop_without_transfers", b.build()),
                f"event #{call.index} (author databricks_analyst", "calls transfer_to_agent",
                f"event #{transfer.index} (author databricks_analyst", "transfers to 'job_builder'")


# --- scenario_expectations ---------------------------------------------------------


def final_answer_trace() -> Trace:
    b = TraceBuilder()
    b.start_turn()
    b.delegate("FINAL_VAR('answer')")
    b.execute(final_answer="42")
    b.process("The answer is 42.")
    b.end_turn()
    return b.build()


def test_scenario_expectations_pass() -> None:
    scenario = make_scenario(executions=1, final_answer="42", termination="final_answer",
                             state={"rlm:final_answer": "42", "rlm:iteration": 1, "rlm:exit_requested": None})
    result = run("scenario_expectations", final_answer_trace(), scenario=scenario)
    assert_pass(result)
    assert len(result.evidence) == 6


def test_scenario_expectations_fail() -> None:
    scenario = make_scenario(executions=2, final_answer="41", termination="exit_loop",
                             state={"rlm:final_answer": None, "rlm:iteration": 3}, outcome_error="retries exhausted")
    assert_fail(run("scenario_expectations", final_answer_trace(), scenario=scenario),
                "executions: expected 2, the trace has 1",
                "final_answer: expected '41', turn 0 (session s1) ended with '42'",
                "termination: expected 'exit_loop'",
                "state 'rlm:final_answer': must be absent; persisted snapshot of session s1 after turn 0 holds '42'",
                "state 'rlm:iteration': expected 3",
                "outcome_error: expected an error containing 'retries exhausted'; turn 0 (session s1) has no error")


def test_scenario_expectations_tells_the_met_from_the_unmet() -> None:
    """A failure lists what was not met first, then what was met, marked so (a reader took the met line listed
    under "1 expectation(s) not met" for a second problem)."""
    scenario = make_scenario(executions=1, final_answer="41")
    result = run("scenario_expectations", final_answer_trace(), scenario=scenario)
    assert_fail(result, "final_answer: expected '41'")
    assert result.explanation == "1 expectation(s) not met."
    assert result.evidence[1] == "(met) executions: expected 1, the trace has 1"


def test_scenario_expectations_exact_state_fails_on_a_key_it_does_not_name() -> None:
    """state_match: exact (an imported ADK final_session_state): the session holds nothing else."""
    trace = final_answer_trace()
    stored = trace.final_persisted("s1")
    whole = {**stored.session_state, **{f"user:{k}": v for k, v in stored.user_state.items()},
             **{f"app:{k}": v for k, v in stored.app_state.items()}}
    exact = run("scenario_expectations", trace, scenario=make_scenario(state=whole, state_match="exact"))
    assert_pass(exact)
    assert any(line.startswith("state (exact): persisted snapshot of session s1 after turn 0 holds no key beyond")
               for line in exact.evidence)
    fewer = {k: v for k, v in whole.items() if k != "rlm:iteration"}
    assert_pass(run("scenario_expectations", trace, scenario=make_scenario(state=fewer)))  # subset: fine
    assert_fail(run("scenario_expectations", trace, scenario=make_scenario(state=fewer, state_match="exact")),
                "state (exact): persisted snapshot of session s1 after turn 0 holds 1 key(s) the expected state "
                "does not: 'rlm:iteration' = 1")


def test_scenario_expectations_outcome_error_and_na() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.end_turn(error="ServerError: 503 retries exhausted")
    assert_pass(run("scenario_expectations", b.build(), scenario=make_scenario(outcome_error="retries exhausted")))
    assert_na(run("scenario_expectations", happy_trace()), "sets no executions")


@pytest.mark.parametrize("trace_factory", [happy_trace, two_turn_trace, final_answer_trace, storing_trace])
def test_checks_do_not_modify_the_trace(trace_factory) -> None:
    trace = trace_factory()
    before = trace.model_dump()
    run_checks(make_context(trace))
    assert trace.model_dump() == before


def test_processor_model_runs_pairs_responses_after_a_failed_call() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    failed_execution = b.execute()
    failed_request = b.request(b.profile.results_processor, answered=False)  # 503 after retries: no response
    b.end_turn(error="ServerError: 503 UNAVAILABLE")
    b.start_turn("again")
    b.delegate("print(2)")
    good_execution = b.execute(stdout="2\n")
    b.process("It printed 2.")
    b.exit_loop()
    b.end_turn()
    text = assert_fail(run("processor_model_runs", b.build()),
                       f"event #{failed_execution.index} (author job_builder",
                       f"request #{failed_request.index} (agent results_processor")
    assert f"event #{good_execution.index} " not in text


def test_stage_gating_ignores_delta_only_processor_events() -> None:
    """A plugin's after_agent write while the processor was gated is not a processor run."""
    b = TraceBuilder()
    b.start_turn()
    b.delegate()
    b.execute()
    b.process()
    b.analyst_text()
    b.event(b.profile.results_processor, delta={keys.STAGE: keys.STAGE_PROCESSED})
    b.exit_loop()
    b.end_turn()
    assert_pass(run("stage_gating", b.build()))


def test_outcome_from_storage_skips_turns_whose_runner_crashed() -> None:
    b = TraceBuilder()
    b.start_turn()
    b.exit_loop()
    b.end_turn()
    b.start_turn("again")
    b.exit_loop()
    b.end_turn(outcome=TurnOutcome(), run_error="RuntimeError: the runner crashed")
    assert_pass(run("outcome_from_storage", b.build()))


def test_a_delegation_key_cleared_by_the_executor_is_no_new_delegation() -> None:
    """With delegation_key, the executor clearing the key (None) after running the code is the cleanup the checks
    ask for: stage_gating counted it as 'a fresh delegation never executed' on a healthy agent (a newcomer's)."""
    from harness.targets.profile import TargetProfile

    profile = TargetProfile(name="mine", analyst="analyst", delegation_key="pending_code", job_builder="runner",
                            execution_key="last_output")
    b = TraceBuilder(profile=profile)
    b.start_turn()
    b.event("analyst", text="print(1)", delta={"pending_code": "print(1)"})
    b.event("runner", delta={"pending_code": None, "last_output": "1\n"})
    b.event("analyst", text="", delta={"pending_code": ""})
    b.end_turn()
    assert_pass(run("stage_gating", b.build(), profile=profile))


def _output_key_profile(**fields):
    """A newcomer's shape: the analyst's output_key holds every answer; a BaseAgent runs fenced code and clears it."""
    from harness.targets.profile import TargetProfile

    return TargetProfile(name="mine", analyst="analyst", delegation_key="pending_code", job_builder="runner",
                         **fields)


def test_a_plain_answer_through_an_output_key_is_no_delegation_with_a_pattern() -> None:
    """The analyst writes its output_key on every answer: a plain answer counted as a delegation 'never executed'
    (init's smoke failed on a healthy agent), and the executor consuming it without running it counted as an
    execution. With the pattern both are what they are, and a fenced answer left unexecuted still fails."""
    profile = _output_key_profile(delegation_pattern="```")
    b = TraceBuilder(profile=profile)
    b.start_turn()
    b.event("analyst", text="Hello, no code needed.", delta={"pending_code": "Hello, no code needed."})
    b.event("runner", delta={"pending_code": None})  # consumed without running
    b.end_turn()
    assert_pass(run("stage_gating", b.build(), profile=profile))

    # Without a pattern the harness cannot tell the plain answer from code: declined, said so, not failed.
    unpatterned = _output_key_profile()
    result = run("stage_gating", b.build(), profile=unpatterned)
    assert_pass(result)
    assert "1 'pending_code' write(s) runner cleared without running, counted as declined" in result.explanation

    b = TraceBuilder(profile=profile)
    b.start_turn()
    b.event("analyst", text="```python\nprint(1)\n```", delta={"pending_code": "```python\nprint(1)\n```"})
    b.event("runner", delta={"pending_code": None})  # a broken runner: consumed the code, never ran it
    b.end_turn()
    assert_fail(run("stage_gating", b.build(), profile=profile), "never executed")


def test_the_executor_running_fenced_code_is_one_execution_per_delegation() -> None:
    profile = _output_key_profile(delegation_pattern="```")
    b = TraceBuilder(profile=profile)
    b.start_turn()
    b.event("analyst", text="```python\nprint(1)\n```", delta={"pending_code": "```python\nprint(1)\n```"})
    b.event("runner", delta={"pending_code": None, "last_output": "1\n"})
    b.event("runner", delta={"last_output": "1\n"})  # a stale re-run: no fresh delegation before it
    b.end_turn()
    assert_fail(run("stage_gating", b.build(), profile=profile), "runner ran Job_B without a fresh delegation")


def test_a_delegation_pattern_that_is_no_regex_is_a_clear_profile_error(tmp_path) -> None:
    from harness.targets.profile import ProfileError, load_profile

    path = tmp_path / "rlm-profile.yaml"
    path.write_text("name: mine\ndelegation_key: pending_code\ndelegation_pattern: '(```'\n", encoding="utf-8")
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    assert f"{path}:3: field 'delegation_pattern'" in str(caught.value)
    assert "not a regular expression" in str(caught.value)


def test_scenario_expectations_null_follows_the_services_none_semantics() -> None:
    """An expected null means "cleared": absent where the service deletes on None, absent or null where it stores
    None (ADK's own services). An ADK evalset's final_session_state holding null failed "must be absent" on the
    None-storing service it came from; a reference scenario failed the same way on ADK's services."""
    from harness.targets.profile import TargetProfile

    def trace_with(semantics: str) -> tuple[Trace, TargetProfile]:
        profile = reference_profile().model_copy(update={"none_semantics": semantics})
        b = TraceBuilder(profile=profile)
        b.start_turn()
        b.event("rlm_orchestrator", delta={"rlm:exit_requested": True, "rlm:final_answer": "42"})
        b.event("rlm_orchestrator", delta={"rlm:exit_requested": None})
        b.end_turn()
        return b.build(), profile

    scenario = make_scenario(state={"rlm:exit_requested": None, "rlm:never_written": None})
    for semantics in ("store", "delete"):
        trace, profile = trace_with(semantics)
        assert_pass(run("scenario_expectations", trace, scenario=scenario, profile=profile))
    trace, profile = trace_with("store")
    assert_fail(run("scenario_expectations", trace, scenario=make_scenario(state={"rlm:final_answer": None}),
                    profile=profile),
                "state 'rlm:final_answer': must hold no value (absent, or null: the run's service stores None)")
    # Deleting semantics keep the strict reading: a stored null is a key still there.
    trace, _ = trace_with("store")
    assert_fail(run("scenario_expectations", trace, scenario=scenario,
                    profile=reference_profile().model_copy(update={"none_semantics": "delete"})),
                "state 'rlm:exit_requested': must be absent; persisted snapshot of session s1 after turn 0 holds None")
