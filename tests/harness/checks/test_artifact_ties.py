"""artifacts_consumed on a processor written in code (a BaseAgent digesting ADK code-execution results into a
user: summary and per-artifact status keys): each artifact is tied to the execution that produced it (two
executions in one invocation: artifact 2 belongs to execution 2), and the deadline is the profile's
``consumed_by`` (a design that marks consumption at the start of the next turn is no false alarm in a one-turn
scenario, and its stale variant is caught when a next turn exists)."""

from __future__ import annotations

from typing import Any

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from harness.checks.testing import TraceBuilder, make_context
from harness.targets.profile import TargetProfile
from harness.trace.model import AgentInfo, EventRecord


def digest_profile(**changes: Any) -> TargetProfile:
    return TargetProfile.model_validate({
        "name": "digest_rlm", "loop_agent": "loop", "analyst": "coder", "execution_key": "exec_result",
        "results_processor": "digest", "summary_key": "user:summary", "artifact_status_prefix": "artifact:",
        "none_semantics": "store", **changes})


AGENTS = [AgentInfo(name="loop", kind="LoopAgent", llm_agent=False),
          AgentInfo(name="coder", kind="LlmAgent", llm_agent=True, parent="loop"),
          AgentInfo(name="digest", kind="DigestAgent", llm_agent=False, parent="loop")]


class Digest:
    def __init__(self, **changes: Any) -> None:
        self.profile = digest_profile(**changes)
        self.b = TraceBuilder(profile=self.profile, plugins=(), agents=AGENTS)

    def execute(self, stdout: str) -> EventRecord:
        """One code block run by the coder's code executor: its result event (it names no artifact id)."""
        self.b.request("coder", response_text=f"```python\nprint({stdout})\n```")
        self.b.event("coder", text=f"```python\nprint({stdout})\n```")
        return self.b.event("coder", delta={"exec_result": f"stdout: {stdout}\n"})

    def digest(self, statuses: dict[str, str]) -> EventRecord:
        """The digest agent: no model, no text; it writes the summary and the artifacts' statuses."""
        return self.b.event("digest", delta={"user:summary": "digested",
                                             **{f"artifact:{k}": v for k, v in statuses.items()}})

    def run(self) -> CheckResult:
        [result] = run_checks(make_context(self.b.build(), profile=self.profile), only=["artifacts_consumed"])
        return result


def text(result: CheckResult) -> str:
    return result.explanation + "\n" + "\n".join(result.evidence)


def test_a_digest_after_two_executions_of_one_invocation_analyses_both() -> None:
    d = Digest()
    d.b.start_turn()
    d.execute("1")
    d.execute("2")
    d.digest({"1": "consumed", "2": "consumed"})
    d.b.end_turn()
    result = d.run()
    assert result.status is Status.PASS, text(result)
    assert "2 analysed artifact(s) consumed" in result.explanation


def test_artifact_2_belongs_to_execution_2() -> None:
    """Ids '1' and '2', and execution 1 printed 2: the artifact left stale is 2, whose execution is the second."""
    d = Digest()
    d.b.start_turn()
    d.execute("2")
    d.digest({"1": "consumed"})
    second = d.execute("1")
    d.digest({"2": "executed"})  # the stale status: never marked consumed
    d.b.end_turn()
    result = d.run()
    assert result.status is Status.FAIL, text(result)
    [problem] = result.evidence
    assert problem.startswith("artifact 2 ") and f"its execution event #{second.index} " in problem, problem


def next_turn_design(*, turns: int, mark_at_start: bool = True) -> Digest:
    """Marks consumption at the start of the next turn (a before_agent_callback of the loop)."""
    d = Digest(consumed_by="next_turn")
    for turn in range(turns):
        d.b.start_turn(f"question {turn}")
        if turn and mark_at_start:
            d.b.event("loop", delta={f"artifact:{turn}": "consumed"})
        d.execute(str(turn + 1))
        d.digest({str(turn + 1): "executed"})
        d.b.end_turn()
    return d


def test_consumption_due_at_the_next_turn_is_not_a_false_alarm_in_one_turn() -> None:
    result = next_turn_design(turns=1).run()
    assert result.status is Status.PASS, text(result)
    assert "not due yet" in result.explanation
    same_turn = next_turn_design(turns=1)
    same_turn.profile = same_turn.profile.model_copy(update={"consumed_by": "same_turn"})
    assert same_turn.run().status is Status.FAIL


def test_consumption_due_at_the_next_turn_passes_when_marked_and_fails_stale() -> None:
    assert next_turn_design(turns=2).run().status is Status.PASS
    result = next_turn_design(turns=2, mark_at_start=False).run()
    assert result.status is Status.FAIL, text(result)
    assert "artifact 1 " in text(result) and "by the next turn (turn 1)" in text(result)


def test_artifacts_marked_pending_when_delegated_keep_their_own_executions() -> None:
    d = Digest()
    d.b.start_turn()
    d.b.event("coder", delta={"artifact:k1": "pending"})
    d.execute("1")
    d.digest({"k1": "consumed"})
    d.b.event("coder", delta={"artifact:k2": "pending"})
    second = d.execute("2")
    d.digest({"k2": "executed"})
    d.b.end_turn()
    result = d.run()
    assert result.status is Status.FAIL, text(result)
    [problem] = result.evidence
    assert problem.startswith("artifact k2 ") and f"its execution event #{second.index} " in problem, problem
