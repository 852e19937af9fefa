"""sublm_batch_concurrent on hand-built traces: batch wall time against scripted delays, and split batches."""

from __future__ import annotations

from typing import Any

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import happy_trace, make_context
from harness.scenario.models import Scenario
from harness.trace.model import Trace

CODE = "answers = llm_query_batched(['a', 'b', 'c', 'd'])\nprint(answers)"


def _scenario(code: str = CODE) -> Scenario:
    return Scenario.model_validate({
        "name": "unit", "description": "A hand-built trace.", "sessions": [{"id": "s1", "turns": [{"user": "go"}]}],
        "script": {"databricks_analyst": [{"call": "delegate_code_results", "args": {"code": code,
                                                                                     "instruction": "x"}}],
                   "sub_lm": [{"text": t, "delay": 0.5} for t in "abcd"]}})


def _run(*, batches: list[dict[str, Any]], calls: int = 4, metrics: dict[str, Any] | None = None,
         code: str = CODE) -> CheckResult:
    trace: Trace = happy_trace()
    record = trace.executions[0]
    record.sublm_batches, record.sublm_calls = batches, calls
    record.metrics = metrics if metrics is not None else {"sublm_batched_calls": 4 if batches else 0,
                                                          "sublm_latency_s": 2.0}
    [result] = run_checks(make_context(trace, scenario=_scenario(code)), only=["sublm_batch_concurrent"])
    return result


def test_a_batch_that_took_its_slowest_answer_passes_and_one_that_took_the_sum_fails() -> None:
    assert _run(batches=[{"prompts": 4, "wall_s": 0.52}]).status is Status.PASS
    result = _run(batches=[{"prompts": 4, "wall_s": 2.01}])
    assert result.status is Status.FAIL and "llm_query_batched of 4 prompts took 2.01 s" in result.evidence[0]


def test_code_that_calls_llm_query_batched_but_shows_only_single_calls_had_its_batch_split() -> None:
    result = _run(batches=[])
    assert result.status is Status.FAIL
    assert "reports no llm_query_batched call (sublm_batches is empty) and 4 single, unbatched sub-LM calls, " \
           "2.00 s together" in result.evidence[0]


def test_without_a_batched_call_in_the_code_or_batch_counts_in_the_result_nothing_is_judged() -> None:
    assert _run(batches=[], code="print(llm_query('a'))").status is Status.NOT_APPLICABLE
    assert _run(batches=[], metrics={}).status is Status.NOT_APPLICABLE  # a target whose result counts no batches
