"""ADK's code executors as a shape of their own: ``LlmAgent(code_executor=...)`` hands code over in its model's
answer and ADK runs it, with no tool, key or executor agent of the target's.

The layout: a LoopAgent ``rlm_loop`` of ``analyst`` (an LlmAgent with ``UnsafeLocalCodeExecutor``: its answer's
```` ```python ```` block becomes an ``executable_code`` part in one event, the result a ``code_execution_result``
part in the next, with ADK's own ``_code_execution_context`` delta) and ``digest`` (a BaseAgent writing
``user:last_summary`` and an ``artifact:<id>`` status per execution). A model-side executor
(``BuiltInCodeExecutor``) puts both parts in the model's answer. Each rule is shown failing on a broken trace.
"""

from __future__ import annotations

from typing import Any

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import TraceBuilder, make_context, make_scenario
from harness.checks.timeline import code_blocks, delegation_count, executions
from harness.targets.profile import TargetProfile
from harness.trace.model import AgentInfo, CodePartRecord, EventRecord, Trace

DELIMITERS = [("```tool_code\n", "\n```"), ("```python\n", "\n```")]
ADK_CONTEXT = "_code_execution_context"


def profile(**changes: Any) -> TargetProfile:
    return TargetProfile.model_validate({
        "name": "code_exec", "loop_agent": "rlm_loop", "analyst": "analyst", "code_executor": "analyst",
        "results_processor": "digest", "summary_key": "user:last_summary", "artifact_status_prefix": "artifact:",
        "none_semantics": "store", **changes})


def agents(*, model_side: bool = False, digest_llm: bool = False) -> list[AgentInfo]:
    return [AgentInfo(name="rlm_loop", kind="LoopAgent", llm_agent=False),
            AgentInfo(name="analyst", kind="LlmAgent", parent="rlm_loop", instruction_kind="provider", llm_agent=True,
                      code_executor="BuiltInCodeExecutor" if model_side else "UnsafeLocalCodeExecutor",
                      code_block_delimiters=DELIMITERS, model_side_execution=model_side),
            AgentInfo(name="digest", kind="LlmAgent" if digest_llm else "DigestAgent", parent="rlm_loop",
                      llm_agent=digest_llm)]


def code(source: str) -> CodePartRecord:
    return CodePartRecord(kind="executable_code", code=source)


def result(output: str) -> CodePartRecord:
    return CodePartRecord(kind="code_execution_result", outcome="OUTCOME_OK", output=f"Code execution result:\n{output}")


class CodeRlm:
    """The agent's steps, as ADK records them."""

    def __init__(self, prof: TargetProfile | None = None, **agent_options: Any) -> None:
        self.profile = prof or profile()
        self.b = TraceBuilder(profile=self.profile, plugins=(), agents=agents(**agent_options))
        self.count = 0
        self.context: dict[str, Any] = {}

    def turn(self, message: str = "What is 2 + 2?") -> None:
        self.b.start_turn(message, cleanup=False)

    def run_code(self, source: str = "print(2 + 2)", output: str = "4\n") -> EventRecord:
        """The model answers a ```python block: ADK's event with the block as executable_code, then its result."""
        answer = f"Let me compute.\n```python\n{source}\n```"
        self.b.request("analyst", system_instruction="Answer with Python.", response_text=answer)
        self.b.event("analyst", text="Let me compute.\n", code_parts=[code(source)])
        self.count += 1
        return self.b.event("analyst", code_parts=[result(output)], delta={ADK_CONTEXT: dict(self.context)})

    def model_side(self, *blocks: tuple[str, str]) -> EventRecord:
        """A BuiltInCodeExecutor answer: the model ran each block itself, code and result parts in its answer."""
        self.b.request("analyst", system_instruction="Answer with Python.", response_text="")
        parts = [p for source, output in blocks for p in (code(source), result(output))]
        self.count += len(blocks)
        return self.b.event("analyst", code_parts=parts)

    def answer(self, text: str = "The answer is 4.") -> EventRecord:
        self.b.request("analyst", system_instruction="Answer with Python.", response_text=text)
        return self.b.event("analyst", text=text)

    def digest(self, *artifacts: str, summary: str = "It printed 4.", status: str = "consumed") -> EventRecord:
        ids = artifacts or (f"a{self.count}",)
        return self.b.event("digest", text=f"Digested {', '.join(ids)}.",
                            delta={"user:last_summary": summary, **{f"artifact:{a}": status for a in ids}})

    def build(self) -> Trace:
        self.b.end_turn()
        return self.b.build()


def one_good_turn() -> CodeRlm:
    """The correct agent's turn, not yet built: the code block, its run, the answer, the digest."""
    r = CodeRlm()
    r.turn()
    r.run_code()
    r.answer()
    r.digest()
    return r


def correct() -> Trace:
    return one_good_turn().build()


def run(name: str, trace: Trace, prof: TargetProfile | None = None) -> CheckResult:
    [verdict] = run_checks(make_context(trace, profile=prof or profile(), scenario=make_scenario()), only=[name])
    return verdict


def text_of(verdict: CheckResult) -> str:
    return verdict.explanation + "\n" + "\n".join(verdict.evidence)


def test_code_blocks_are_found_in_the_executors_delimiters_in_order() -> None:
    text = "a\n```python\nprint(1)\n```\nb\n```tool_code\nprint(2)\n```\n```sql\nSELECT 1\n```"
    assert code_blocks(text, DELIMITERS) == ["print(1)", "print(2)"]
    assert code_blocks("```python\nunclosed", DELIMITERS) == []


def test_the_correct_agent_passes_the_checks_that_read_delegations_and_executions() -> None:
    trace = correct()
    assert len(executions(trace, profile())) == 1
    for name in ("stage_gating", "summary_persisted", "artifacts_consumed"):
        verdict = run(name, trace)
        assert verdict.status is Status.PASS, (name, text_of(verdict))
    assert "a code_execution_result part in an event of analyst" in text_of(run("stage_gating", trace))


def test_without_code_executor_in_the_profile_the_shape_is_not_judged() -> None:
    """The draft before this shape existed: no delegation, no execution: n/a with the field to set."""
    verdict = run("stage_gating", correct(), profile(code_executor=None))
    assert verdict.status is Status.NOT_APPLICABLE and "code_executor" in verdict.explanation


def test_a_stale_re_digest_fails_stage_gating() -> None:
    r = one_good_turn()
    r.answer("Still 4.")
    r.digest(summary="It printed 4.")  # no new execution: the old result digested again
    verdict = run("stage_gating", r.build())
    assert verdict.status is Status.FAIL
    assert "digest ran again without a new execution" in text_of(verdict)


def test_code_left_in_the_text_is_a_delegation_nothing_executed() -> None:
    """Code in the executor's delimiters that ADK did not run (past its error_retry_attempts) is handed over and
    never executed; a model-side executor's text is only text."""
    r = CodeRlm()
    r.turn()
    r.run_code()
    r.b.request("analyst", system_instruction="Answer with Python.", response_text="")
    event = r.b.event("analyst", text="Again:\n```python\nprint(5)\n```")
    r.digest()
    trace = r.build()
    assert delegation_count(event, profile(), trace.agents) == 1
    verdict = run("stage_gating", trace)
    assert verdict.status is Status.FAIL
    assert "a fresh code block of analyst that analyst's code executor never executed" in text_of(verdict)
    assert delegation_count(event, profile(), agents(model_side=True)) == 0


def test_an_execution_without_its_code_block_is_a_stale_trigger() -> None:
    r = CodeRlm()
    r.turn()
    r.run_code()
    r.b.event("analyst", code_parts=[result("4\n")], delta={ADK_CONTEXT: {}})
    r.answer()
    r.digest()
    verdict = run("stage_gating", r.build())
    assert verdict.status is Status.FAIL and "without a fresh code block of analyst" in text_of(verdict)


def test_two_code_blocks_in_one_model_answer_are_two_executions_each_tied_to_its_artifact() -> None:
    """A model-side executor's answer holds both blocks: two delegations, two executions; the digest names each
    artifact by what its code printed, and artifact a2 is tied to the second block, not the first."""
    r = CodeRlm(model_side=True)
    r.turn()
    r.model_side(("print('a1')", "a1\n"), ("print('a2')", "a2\n"))
    r.answer("Both ran.")
    r.b.event("digest", text="Digested.", delta={"user:last_summary": "a1 and a2", "artifact:a2": "consumed",
                                                 "artifact:a1": "consumed"})
    trace = r.build()
    assert len(executions(trace, profile())) == 2
    gating = run("stage_gating", trace)
    assert gating.status is Status.PASS and "2 fresh delegation(s), 2 execution(s)" in gating.explanation
    assert run("artifacts_consumed", trace).status is Status.PASS


def test_an_artifact_of_the_second_block_left_unconsumed_is_named() -> None:
    r = CodeRlm(model_side=True)
    r.turn()
    r.model_side(("print('a1')", "a1\n"), ("print('a2')", "a2\n"))
    r.answer("Both ran.")
    r.b.event("digest", text="Digested.", delta={"user:last_summary": "a1", "artifact:a2": "executed",
                                                 "artifact:a1": "consumed"})
    verdict = run("artifacts_consumed", r.build())
    assert verdict.status is Status.FAIL
    assert "artifact a2" in text_of(verdict) and "artifact a1" not in text_of(verdict)


def test_a_non_llm_processor_is_not_judged_by_its_model_and_an_llm_one_is() -> None:
    verdict = run("processor_model_runs", correct())
    assert verdict.status is Status.NOT_APPLICABLE and "digest is not an LlmAgent" in verdict.explanation
    r = CodeRlm(digest_llm=True)  # an LlmAgent digest that never called its model: skipped
    r.turn()
    r.run_code()
    r.answer()
    r.digest()
    assert run("processor_model_runs", r.build()).status is Status.FAIL


def test_results_the_analysts_own_model_read_back_are_not_the_processors() -> None:
    """ADK hands each result back to the analyst's model, which may run more code before the processor's turn."""
    r = CodeRlm(digest_llm=True)
    r.turn()
    r.run_code()
    r.run_code("print(5)", "5\n")
    r.answer()
    r.b.request("digest", system_instruction="Summarise.", response_text="It printed 5.")
    r.digest(summary="It printed 5.")
    verdict = run("processor_model_runs", r.build())
    assert verdict.status is Status.PASS, text_of(verdict)
    assert "1 execution(s) went back to analyst's own model" in verdict.explanation


# --- ADK's own state: reported once, never the agent's, never hiding the agent's own ---------------------------


def with_adk_bookkeeping(*, agent_mutation: bool = False) -> Trace:
    """The correct agent, with what ADK writes into the live session.state without an event (the final answer
    made ADK set its context again; every execution's output is kept in memory only)."""
    r = one_good_turn()
    r.b.live["_code_execution_results"] = {r.b.invocation_id: [{"code": "print(2 + 2)", "result_stdout": "4\n"}]}
    r.b.live[ADK_CONTEXT] = {"execution_session_id": "s1"}
    if agent_mutation:
        r.b.live["user:seen_results"] = 1  # ctx.session.state["user:seen_results"] = 1 in the digest
    return r.build()


def test_adk_writing_state_without_an_event_is_a_note_not_a_failure() -> None:
    verdict = run("no_unpersisted_mutation", with_adk_bookkeeping())
    assert verdict.status is Status.PASS, text_of(verdict)
    assert verdict.explanation.count("ADK wrote '_code_execution_context', '_code_execution_results' without an "
                                     "event") == 1


def test_the_agents_own_direct_mutation_still_fails_beside_adks_keys() -> None:
    verdict = run("no_unpersisted_mutation", with_adk_bookkeeping(agent_mutation=True))
    assert verdict.status is Status.FAIL
    assert len(verdict.evidence) == 1 and "'user:seen_results'" in verdict.evidence[0]
    assert "ADK wrote '_code_execution_context'" in verdict.explanation


def test_the_state_contract_does_not_own_adks_key_for_the_agent() -> None:
    contract = [{"key": "user:last_summary", "writers": ["digest"]}, {"key": "artifact:", "writers": ["digest"],
                                                                      "family": True}]
    verdict = run("minimal_deltas", correct(), profile(contract=contract))
    assert verdict.status is Status.PASS, text_of(verdict)
    assert "ADK wrote '_code_execution_context' in its code execution result events" in verdict.explanation
    strict = profile(contract=contract[:1])
    assert "'artifact:a1' is not in the state contract" in text_of(run("minimal_deltas", correct(), strict))


def test_a_plain_digest_that_writes_without_text_still_runs_and_a_stale_one_is_seen() -> None:
    """A BaseAgent processor says nothing: its writes are its runs (an LlmAgent's delta-only group is a plugin's)."""
    r = CodeRlm()
    r.turn()
    r.run_code()
    r.answer()
    r.b.event("digest", delta={"user:last_summary": "It printed 4.", "artifact:a1": "consumed"})
    r.answer("Still 4.")
    r.b.event("digest", delta={"user:last_summary": "It printed 4."})
    verdict = run("stage_gating", r.build())
    assert verdict.status is Status.FAIL and "digest ran again without a new execution" in text_of(verdict)


def failed_run(r: CodeRlm, source: str) -> EventRecord:
    r.b.request("analyst", system_instruction="Answer with Python.", response_text=f"```python\n{source}\n```")
    r.b.event("analyst", code_parts=[code(source)])
    r.count += 1
    return r.b.event("analyst", code_parts=[CodePartRecord(kind="code_execution_result", outcome="OUTCOME_FAILED",
                                                           output="Traceback ...")], delta={ADK_CONTEXT: {}})


def test_code_adk_left_unrun_past_its_retry_limit_is_not_the_agents() -> None:
    """After error_retry_attempts (2) failed runs in a row in one invocation ADK runs no more code: the block left
    in the answer is ADK's limit, not a delegation the agent's executor dropped. One failure is not the limit."""
    def trace_with(failures: int) -> Trace:
        r = CodeRlm(prof=profile())
        r.b.trace.agents[1] = r.b.trace.agents[1].model_copy(update={"code_error_retry_attempts": 2})
        r.turn()
        for n in range(failures):
            failed_run(r, f"raise ValueError({n})")
        r.b.request("analyst", system_instruction="Answer with Python.", response_text="")
        r.b.event("analyst", text="```python\nprint('not run')\n```")
        r.b.event("digest", text="Digested.", delta={"user:last_summary": "failed", **{
            f"artifact:a{n + 1}": "consumed" for n in range(failures)}})
        return r.build()

    assert run("stage_gating", trace_with(2)).status is Status.PASS
    assert run("artifacts_consumed", trace_with(2)).status is Status.PASS  # a1 was read back, then digested
    verdict = run("stage_gating", trace_with(1))
    assert verdict.status is Status.FAIL and "never executed" in text_of(verdict)


def test_a_result_left_by_a_turn_that_raised_is_processed_in_the_next_one() -> None:
    """Turn 0 executes, then its model call raises before the digest's turn: the digest of turn 1 catches up on
    that result (explore found this on the correct agent). Without the crash it is a stale re-digest."""
    from harness.trace.model import TurnError

    def trace_with(crash: bool) -> Trace:
        r = CodeRlm()
        r.turn("first")
        r.run_code()
        r.b.end_turn(outcome=None)
        if crash:
            r.b.trace.turns[-1].outcome.crash = TurnError(type="ServerError", message="500", origin="model analyst")
        else:
            r.digest()
        r.turn("second")
        r.answer()
        r.digest()
        return r.build()

    assert run("stage_gating", trace_with(crash=True)).status is Status.PASS
    assert run("stage_gating", trace_with(crash=False)).status is Status.FAIL


def test_an_artifact_of_a_turn_that_raised_is_analysed_by_the_next_turns_digest() -> None:
    from harness.trace.model import TurnError

    r = CodeRlm()
    r.turn("first")
    r.run_code()
    r.b.end_turn()
    r.b.trace.turns[-1].outcome.crash = TurnError(type="ServerError", message="500", origin="model analyst")
    r.turn("second")
    r.answer()
    r.digest()
    assert run("artifacts_consumed", r.build()).status is Status.PASS
