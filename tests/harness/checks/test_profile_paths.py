"""Checks speak the target profile: a user's agent of another layout is judged by its own names and keys.

The layout here is not ours: a root SequentialAgent runs a ``context_loader`` (it clears the last turn's
flags), then ``refine_loop`` (a LoopAgent) of ``code_generator`` (its output_key ``generated_code`` hands the
code over), ``code_executor`` (runs it, writes ``exec_result`` and the result summary ``exec_summary`` itself)
and ``completion_checker`` (marks the artifact used and ends the loop). Artifacts are state keys
``artifact:<id>``; the loop's ending is stored as ``status`` (``done``, named ``final_answer`` by the profile).
Every path is shown passing on a correct trace and failing on one with the defect; and with a neutral profile
(nothing mapped) no check fails on a reference trace: what it cannot map is n/a, with the reason.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import (TraceBuilder, happy_trace, make_context, make_scenario, two_turn_trace)
from harness.scenario.models import Scenario
from harness.targets.profile import TargetProfile
from harness.trace.model import AgentInfo, EventRecord, Trace, TurnOutcome

UNMAPPED_AS_NONE = r"\bNone (run|row|request|event|call|is)\b|\b(no|by|of|from|persisted|a) None\b"
LEAKS = re.compile(r"(author|agent) (job_builder|results_processor|run_conversation|databricks_analyst)|Job_B|"
                   r"databricks_analyst|delegate_code_results|orchestrator_loop|rlm:|" + UNMAPPED_AS_NONE)
"""What a verdict on a foreign agent must not say: our agents' names and keys, or an unmapped role as None."""


def foreign_profile(**changes: Any) -> TargetProfile:
    """The foreign agent's profile, as its YAML would say it (``executor:``), with ``changes`` validated too."""
    return TargetProfile.model_validate({
        "name": "foreign", "loop_agent": "refine_loop", "analyst": "code_generator",
        "delegation_key": "generated_code", "executor": "code_executor", "execution_key": "exec_result",
        "summary_author": "code_executor", "summary_key": "exec_summary", "final_answer_key": "answer",
        "termination_key": "status", "termination_map": {"done": "final_answer", "gave_up": "max_iterations"},
        "stale_flag_keys": ["answer", "status"], "artifact_status_prefix": "artifact:", "consumed_value": "used",
        "none_semantics": "store", **changes})


def foreign_agents(generator_instruction: str = "provider") -> list[AgentInfo]:
    return [
        AgentInfo(name="root", kind="SequentialAgent"),
        AgentInfo(name="context_loader", kind="ContextLoaderAgent", parent="root"),
        AgentInfo(name="refine_loop", kind="LoopAgent", parent="root"),
        AgentInfo(name="code_generator", kind="LlmAgent", parent="refine_loop", output_key="generated_code",
                  instruction_kind=generator_instruction),
        AgentInfo(name="code_executor", kind="CodeExecutorAgent", parent="refine_loop"),
        AgentInfo(name="completion_checker", kind="LlmAgent", parent="refine_loop", instruction_kind="provider"),
    ]


class Foreign:
    """The foreign agent's steps, recorded through ``TraceBuilder``'s generic events and requests."""

    def __init__(self, profile: TargetProfile | None = None, *, generator_instruction: str = "provider") -> None:
        self.profile = profile or foreign_profile()
        self.b = TraceBuilder(profile=self.profile, plugins=(), agents=foreign_agents(generator_instruction))
        self.artifact = ""
        self.count = 0

    def turn(self, message: str = "go", *, clear: bool = True, session_id: str = "s1") -> EventRecord:
        """The user's message, then the context loader (no model: its text is not a model answer)."""
        self.b.start_turn(message, cleanup=False, session_id=session_id)
        stale = {k: None for k in self.profile.stale_flag_keys if self.b.live.get(k) is not None}
        return self.b.event("context_loader", text="Loaded the table schema.", delta=stale if clear else {})

    def generate(self, code: str = "print(1)", *, prompt: str | None = None, mark: str = "pending") -> EventRecord:
        self.count += 1
        self.artifact = f"a{self.count}"
        summary = self.b.live.get("exec_summary")
        instruction = prompt if prompt is not None else f"Write Python.\nLast result: {summary or '(none)'}\n"
        self.b.request("code_generator", system_instruction=instruction, response_text=code)
        return self.b.event("code_generator", text=code,
                            delta={"generated_code": code, f"artifact:{self.artifact}": mark})

    def execute(self, stdout: str = "1\n", *, summary: bool = True) -> EventRecord:
        delta: dict[str, Any] = {"exec_result": {"stdout": stdout, "ok": True}, f"artifact:{self.artifact}": "executed"}
        if summary:
            delta["exec_summary"] = f"It printed {stdout.strip()}."
        return self.b.event("code_executor", delta=delta)

    def check(self, *, answer: str | None = "1", status: str = "done", consume: bool = True,
              extra: dict[str, Any] | None = None) -> EventRecord:
        delta: dict[str, Any] = {f"artifact:{self.artifact}": "used"} if consume else {}
        if answer is not None:
            delta |= {"answer": answer, "status": status}
        delta |= extra or {}
        reply = "complete" if answer is not None else "not yet"
        self.b.request("completion_checker", system_instruction="Is the task complete?", response_text=reply)
        return self.b.event("completion_checker", text=reply, delta=delta, escalate=answer is not None)

    def build(self) -> Trace:
        return self.b.build()


def one_turn(**check: Any) -> Foreign:
    """One whole turn of the foreign agent: load context, generate, execute, check (with ``check``'s fields), end."""
    f = Foreign()
    f.turn()
    f.generate()
    f.execute()
    f.check(**check)
    f.b.end_turn()
    return f


def foreign_trace() -> Trace:
    """Two turns of one session, each: load context, generate, execute (with its summary), check."""
    f = Foreign()
    f.turn("What does the code print?")
    f.generate()
    f.execute()
    f.check()
    f.b.end_turn()
    f.turn("And the next one?")
    f.generate("print(2)")
    f.execute("2\n")
    f.check(answer="2")
    f.b.end_turn()
    return f.build()


def run(name: str, trace: Trace, profile: TargetProfile | None = None, scenario: Scenario | None = None) -> CheckResult:
    [result] = run_checks(make_context(trace, profile=profile or foreign_profile(), scenario=scenario), only=[name])
    return result


def assert_pass(result: CheckResult, *fragments: str) -> None:
    assert result.status is Status.PASS, (result.explanation, result.evidence)
    text = result.explanation + "\n" + "\n".join(result.evidence)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def assert_fail(result: CheckResult, *fragments: str) -> str:
    assert result.status is Status.FAIL, (result.explanation, result.evidence)
    text = result.explanation + "\n" + "\n".join(result.evidence)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"
    assert not LEAKS.search(text), f"{LEAKS.search(text)[0]!r} in a foreign agent's verdict:\n{text}"
    return text


def assert_na(result: CheckResult, *fragments: str) -> None:
    assert result.status is Status.NOT_APPLICABLE, (result.explanation, result.evidence)
    for fragment in fragments:
        assert fragment in result.explanation, f"{fragment!r} not in {result.explanation!r}"


# --- (a) a neutral profile never fails a reference trace ------------------------------------------------------


def reference_traces() -> list[Trace]:
    b = TraceBuilder()
    b.start_turn("first")
    b.delegate()
    b.execute(final_answer="42")
    b.process("The answer is 42.")
    b.end_turn()
    b.start_turn("second", session_id="s2", user_id="user_2")
    b.delegate("print(2)")
    b.execute(stdout="2\n")
    b.process("It printed 2.")
    b.exit_loop()
    b.end_turn()
    return [happy_trace(), two_turn_trace(), b.build(), foreign_trace()]


@pytest.mark.parametrize("index", range(4))
def test_a_neutral_profile_fails_no_check_and_says_why_it_cannot_judge(index: int) -> None:
    trace = reference_traces()[index]
    scenario = make_scenario(executions=5)  # wrong, but a neutral profile cannot count executions
    scenario = scenario.model_copy(update={"limits": scenario.limits.model_copy(
        update={"context_budget_tokens": 10, "preview_chars": 1})})  # budgets the traces break, for mapped roles
    results = run_checks(make_context(trace, profile=TargetProfile(), scenario=scenario))
    failures = [(r.name, r.explanation, r.evidence) for r in results if r.failed]
    assert not failures
    for result in results:
        assert result.explanation.strip(), result.name
        assert not re.search(UNMAPPED_AS_NONE, result.explanation), (result.name, result.explanation)
    unmapped = {r.name for r in results if r.status is Status.NOT_APPLICABLE and (
        "maps no" in r.explanation or "maps none of" in r.explanation or "has no state contract" in r.explanation)}
    assert {"stage_gating", "summary_persisted", "processor_model_runs", "summary_reaches_prompt",
            "artifacts_consumed", "stale_flags_cleared", "outcome_from_storage", "user_history_scoped",
            "history_folded_by_event", "history_keeps_newest", "app_data_shared", "previews_bounded",
            "context_budget", "minimal_deltas"} <= unmapped


def test_the_foreign_agent_passes_every_check_by_its_own_profile() -> None:
    scenario = make_scenario(executions=2, termination="final_answer", final_answer="2")
    results = run_checks(make_context(foreign_trace(), profile=foreign_profile(), scenario=scenario))
    assert not [(r.name, r.explanation, r.evidence) for r in results if r.failed]
    passed = {r.name for r in results if r.status is Status.PASS}
    assert {"stage_gating", "summary_persisted", "summary_reaches_prompt", "artifacts_consumed", "stale_flags_cleared",
            "outcome_from_storage", "scenario_expectations", "loop_without_transfers"} <= passed


# --- (b) execution_key and delegation_key ---------------------------------------------------------------------


def test_stage_gating_by_keys_without_a_processor() -> None:
    assert_pass(run("stage_gating", foreign_trace()), "an event writing 'exec_result'",
                "an event writing 'generated_code'", "only delegation -> execution pairing is judged")


def test_stage_gating_execution_key_names_a_stale_rerun() -> None:
    f = Foreign()
    f.turn()
    f.generate()
    f.execute()
    f.check(answer=None, consume=False)
    rerun = f.execute()  # the executor runs the same code again: no fresh generated_code
    f.check()
    f.b.end_turn()
    assert_fail(run("stage_gating", f.build()), f"event #{rerun.index} (author code_executor",
                "without a fresh delegation ('generated_code' write)", "stale trigger")


def test_execution_key_counts_any_author_and_wins_over_the_executor() -> None:
    f = Foreign(foreign_profile(executor="completion_checker"))
    f.turn()
    f.generate()
    f.execute()  # writes exec_result: an execution though its author is not the profile's executor
    f.check()
    f.b.end_turn()
    assert_pass(run("stage_gating", f.build(), foreign_profile(executor="completion_checker")),
                "1 execution(s)")


def test_stage_gating_delegation_key_names_an_unexecuted_delegation() -> None:
    f = Foreign()
    f.turn()
    f.generate()
    lost = f.generate("print(2)")
    f.execute("2\n")
    f.check(answer="2")
    f.b.end_turn()
    assert_fail(run("stage_gating", f.build()), f"event #{lost.index} (author code_generator",
                "a fresh delegation ('generated_code' write) that code_executor never executed")


# --- (b) summary_author = the executor -------------------------------------------------------------------------


def test_summary_written_by_the_executor_in_its_execution_event() -> None:
    assert_pass(run("summary_persisted", foreign_trace()), "summarised execution(s)",
                "in a persisted code_executor row", "(author code_executor", "at or after")
    assert_na(run("processor_model_runs", foreign_trace()), "maps no results_processor")


def test_summary_persisted_fails_when_the_executor_leaves_it_to_another_agent() -> None:
    f = Foreign()
    f.turn()
    f.generate()
    execution = f.execute(summary=False)
    f.check(extra={"exec_summary": "It printed 1."})  # the checker writes it, not the profile's summary_author
    f.b.end_turn()
    assert_fail(run("summary_persisted", f.build()), f"event #{execution.index} (author code_executor",
                "no code_executor row at or after", "only in rows by other authors",
                "(author completion_checker)", "'exec_summary'")


def test_summary_reaches_prompt_from_the_executor() -> None:
    assert_pass(run("summary_reaches_prompt", foreign_trace()), "code_generator request(s)")
    f = Foreign()
    f.turn()
    f.generate()
    f.execute()
    f.check(answer=None, consume=False)
    blind = f.generate("print(2)", prompt="Write Python.\n")  # the summary never reaches the next prompt
    f.execute("2\n")
    f.check(answer="2")
    f.b.end_turn()
    request = f.b.trace.llm_requests[2]
    assert request.agent == "code_generator" and blind.index > request.index
    assert_fail(run("summary_reaches_prompt", f.build()), f"request #{request.index} (agent code_generator",
                "'It printed 1.'", "(author code_executor")


# --- (b) artifact_status_prefix -------------------------------------------------------------------------------


def test_artifacts_from_state_keys() -> None:
    assert_pass(run("artifacts_consumed", foreign_trace()), "2 analysed artifact(s) used",
                "state keys 'artifact:'<id>")


def test_artifacts_from_state_keys_fail_when_never_marked() -> None:
    f = Foreign()
    f.turn()
    f.generate()
    execution = f.execute()
    f.check(consume=False)
    f.b.end_turn()
    assert_fail(run("artifacts_consumed", f.build()), "artifact a1 (session s1, state key 'artifact:a1')",
                "status 'executed'", f"summarised its execution event #{execution.index} (author code_executor",
                "expected 'used'")


def test_artifacts_from_state_keys_fail_when_marked_before_the_summary() -> None:
    f = Foreign()
    f.turn()
    early = f.generate(mark="used")  # marked used before anything analysed it
    summary = f.execute()
    f.check()
    f.b.end_turn()
    assert_fail(run("artifacts_consumed", f.build()), "artifact a1",
                f"already 'used' right after event #{early.index} (author code_generator",
                f"before event #{summary.index} (author code_executor")


def test_artifacts_consumed_na_says_which_source_is_missing() -> None:
    assert_na(run("artifacts_consumed", foreign_trace(), foreign_profile(artifact_status_prefix=None)),
              "the target exposes no artifact registry) and the profile maps no artifact_status_prefix")
    f = Foreign()
    f.turn()
    f.generate()  # delegated, never executed: nothing was analysed, so no status is owed
    f.b.end_turn()
    assert_na(run("artifacts_consumed", f.build(), foreign_profile(artifact_status_prefix="job:")),
              "No event wrote a 'job:'<id> key and no execution was analysed")


def test_artifacts_never_given_a_status_fail_when_executions_were_summarised() -> None:
    """The prefix is mapped and executions were summarised, but no key under it was ever written: absence is a
    verdict, not "n/a" (issue 31: a variant that never writes its marks passed the check meant for it)."""
    trace = foreign_trace()
    executions = [e for e in trace.events if "exec_result" in e.emitted_delta]
    text = assert_fail(run("artifacts_consumed", trace, foreign_profile(artifact_status_prefix="job:")),
                       "2 execution(s) were summarised, but no event ever wrote a 'job:'<id> key",
                       f"event #{executions[0].index} (author code_executor", "expected a 'job:'<id> key set to 'used'")
    assert f"event #{executions[1].index} (author code_executor" in text


# --- (b) termination_map --------------------------------------------------------------------------------------


def test_outcome_compared_through_the_termination_map() -> None:
    assert_pass(run("outcome_from_storage", foreign_trace()))
    f = Foreign()
    f.turn()
    f.generate()
    f.execute()
    f.check()
    f.b.end_turn(outcome=TurnOutcome(termination="max_iterations", final_answer="1"))
    assert_fail(run("outcome_from_storage", f.build()),
                "outcome.termination is 'max_iterations' but the persisted 'status' is 'done' (named 'final_answer' by "
                "termination_map)")


def test_scenario_termination_is_the_mapped_name() -> None:
    assert_pass(run("scenario_expectations", foreign_trace(), scenario=make_scenario(termination="final_answer")))
    f = one_turn(status="gave_up")
    assert_fail(run("scenario_expectations", f.build(), scenario=make_scenario(termination="final_answer")),
                "termination: expected 'final_answer', turn 0 (session s1) ended with 'max_iterations'")


# --- (b) cleanup by the loader's event ------------------------------------------------------------------------


def test_stale_flags_cleared_by_a_context_loader() -> None:
    assert_pass(run("stale_flags_cleared", foreign_trace()), "'answer' cleared by event #",
                "(author context_loader")


def test_stale_flags_not_cleared_by_the_loader() -> None:
    f = one_turn()
    f.turn("again", clear=False)
    work = f.generate("print(2)")
    late = f.execute("2\n")
    f.b.event("code_executor", delta={"answer": None, "status": None})
    f.check(answer="2")
    f.b.end_turn()
    assert late.index > work.index
    assert_fail(run("stale_flags_cleared", f.build()), "flag 'answer' (= '1' persisted after turn 0)",
                f"before the first agent event event #{work.index} (author code_generator", "only cleared later")


def test_stale_flags_cleared_by_a_root_callback() -> None:
    f = one_turn()
    f.turn("again", clear=False)
    f.b.event("refine_loop", delta={"answer": None, "status": None})  # the loop's before_agent_callback
    f.generate("print(2)")
    f.execute("2\n")
    f.check(answer="2")
    f.b.end_turn()
    assert_pass(run("stale_flags_cleared", f.build()), "(author refine_loop")


# --- (b) an instruction provider's braces are not placeholders -------------------------------------------------


def braces_trace(kind: str) -> Trace:
    f = Foreign(generator_instruction=kind)
    f.turn()
    f.generate(prompt="Write Python, e.g. rows = [{row} for row in data] or {'a': 1}.\n")
    f.execute()
    f.check()
    f.b.end_turn()
    return f.build()


def test_instructions_render_judges_only_string_instructions() -> None:
    assert_pass(run("instructions_render", braces_trace("provider")), "instruction provider")
    assert_fail(run("instructions_render", braces_trace("string")), "request #0 (agent code_generator", "{row}")


# --- loops, history and partial profiles ----------------------------------------------------------------------


def test_loop_without_transfers_judges_every_loop_agent_without_a_profile_loop() -> None:
    profile = foreign_profile(loop_agent=None)
    f = Foreign(profile)
    f.turn()
    f.b.event("context_loader", transfer_to_agent="root")  # outside any loop: not this check's business
    f.generate()
    transfer = f.b.event("code_generator", function_calls=["transfer_to_agent"])
    f.b.end_turn()
    text = assert_fail(run("loop_without_transfers", f.build(), profile), f"event #{transfer.index} (author "
                       "code_generator", "calls transfer_to_agent")
    assert "context_loader" not in text


def test_history_folded_by_any_appended_event_without_a_driver() -> None:
    profile = foreign_profile(history_key="user:history")
    f = Foreign(profile)
    f.turn("What does the code print?")
    f.generate()
    f.execute()
    f.check()
    f.b.event("history_keeper", delta={"user:history": ["What does the code print?"]})
    f.b.end_turn()
    f.turn("And the next one?")
    f.generate("print(2)")
    f.execute("2\n")
    f.check(answer="2")
    f.b.end_turn()
    trace = f.build()
    assert_pass(run("history_folded_by_event", trace, profile), "(author history_keeper")
    trace.persisted[-1].user_state["history"] = ["What does the code print?", "And the next one?"]  # no event
    assert_fail(run("history_folded_by_event", trace, profile), "after turn 1",
                "went from 1 entries to 2 entries with no appended event writing it")


def test_tool_delegation_by_any_author_without_an_analyst() -> None:
    profile = TargetProfile(delegate_tool="run_code", executor="code_executor")
    b = TraceBuilder(profile=profile, plugins=(), agents=foreign_agents())
    b.start_turn(cleanup=False)
    b.event("code_generator", function_calls=["run_code"])
    b.event("code_generator", function_responses=["run_code"], delta={"code": "print(1)"})
    b.event("code_executor", delta={"out": "1"})
    b.end_turn()
    assert_pass(run("stage_gating", b.build(), profile), "1 fresh delegation(s), 1 execution(s)")


def test_scenario_expectations_not_judged_where_the_profile_maps_no_key() -> None:
    profile = foreign_profile(termination_key=None, final_answer_key=None, execution_key=None, executor=None)
    f = Foreign(profile)
    f.turn()
    f.generate()
    f.execute()
    f.check()
    f.b.end_turn()
    scenario = make_scenario(executions=3, termination="final_answer", final_answer="1")
    assert_na(run("scenario_expectations", f.build(), profile, scenario), "No expectation could be judged",
              "maps none of execution_key, job_builder", "maps no termination_key", "maps no final_answer_key")


def test_stage_gating_with_delegations_only_judges_the_processor_against_them() -> None:
    """A delegate tool that runs the code itself, no execution mapped: the summariser may run once per call."""
    profile = TargetProfile(analyst="planner", delegate_tool="run_code", results_processor="summarizer")
    agents = [AgentInfo(name="loop", kind="LoopAgent"), AgentInfo(name="planner", kind="LlmAgent", parent="loop"),
              AgentInfo(name="summarizer", kind="LlmAgent", parent="loop")]
    b = TraceBuilder(profile=profile, plugins=(), agents=agents)
    b.start_turn(cleanup=False)
    b.request("planner", system_instruction="Plan.", response_calls=["run_code"])
    b.event("planner", function_calls=["run_code"])
    b.event("planner", function_responses=["run_code"], delta={"out": "1"})
    b.request("summarizer", system_instruction="Summarise.", response_text="It printed 1.")
    b.event("summarizer", text="It printed 1.")
    b.request("planner", system_instruction="Plan.", response_text="Done.")
    b.event("planner", text="Done.")
    good = b.build()
    b.request("summarizer", system_instruction="Summarise.", response_text="It printed 1 again.")
    again = b.event("summarizer", text="It printed 1 again.")  # ungated: runs again with no new call
    b.end_turn()
    assert_pass(run("stage_gating", good, profile, make_scenario(executions=7)), "each counted as its execution",
                "only the processor's runs are judged")
    assert_fail(run("stage_gating", b.build(), profile), f"event #{again.index} (author summarizer",
                "summarizer ran again without a new execution", "summarizer sent 2 model requests")
    assert_na(run("stage_gating", good, profile.model_copy(update={"results_processor": None})),
              "maps no results_processor to pair with either")


def test_consumed_value_may_be_any_json_scalar() -> None:
    """A target that marks an analysed artifact with ``true`` (or 2) is judged as one that writes "used"."""
    def marked(value: Any) -> Trace:
        f = Foreign(foreign_profile(consumed_value=value))
        f.turn()
        f.generate()
        f.execute()
        f.check(consume=False, extra={f"artifact:{f.artifact}": value})
        f.b.end_turn()
        return f.build()

    for value in (True, 2, 0.5):
        assert_pass(run("artifacts_consumed", marked(value), foreign_profile(consumed_value=value)),
                    "1 analysed artifact(s)")
    text = assert_fail(run("artifacts_consumed", marked(False), foreign_profile(consumed_value=True)), "expected True")
    assert "status 'False'" in text
    assert TargetProfile.model_validate({"consumed_value": True}).is_consumed("true")


def test_termination_map_names_a_stored_boolean_as_yaml_writes_it() -> None:
    profile = foreign_profile(termination_map={"true": "exit_loop", "2": "fatal_error"})
    assert (profile.termination_name(True), profile.termination_name(2), profile.termination_name(False)) == (
        "exit_loop", "fatal_error", False)
