"""Custom processors: a results processor that is not an LlmAgent (a BaseAgent digesting results in code) makes no
model request by design, so processor_model_runs is n/a for it, saying so; an LlmAgent processor that skipped its
model request still fails."""

from __future__ import annotations

from typing import AsyncGenerator

from google.adk.agents import BaseAgent, LlmAgent, LoopAgent

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from harness.checks.testing import TraceBuilder, make_context, reference_agents
from harness.run.runner import describe_agents
from harness.trace.model import Trace


def run(name: str, trace: Trace) -> CheckResult:
    [result] = run_checks(make_context(trace), only=[name])
    return result


def assert_na(result: CheckResult, fragment: str) -> None:
    assert result.status is Status.NOT_APPLICABLE and fragment in result.explanation, (result.status,
                                                                                         result.explanation)


def assert_fail(result: CheckResult, *fragments: str) -> None:
    text = "\n".join(result.evidence)
    assert result.status is Status.FAIL and all(f in text for f in fragments), (result.status, result.explanation,
                                                                                text)


class DigestAgent(BaseAgent):
    """A results processor written in code: it digests the execution result into state, with no model."""

    async def _run_async_impl(self, ctx) -> AsyncGenerator:  # pragma: no cover - never run here
        if False:
            yield None


def digested_trace(*, processor_is_llm: bool) -> tuple[Trace, int]:
    b = TraceBuilder()
    agents = reference_agents(b.profile)
    for agent in agents:
        if agent.name == b.profile.results_processor:
            agent.kind, agent.llm_agent = ("MyProcessor", True) if processor_is_llm else ("DigestAgent", False)
    b.trace.agents = agents
    b.start_turn()
    b.delegate()
    execution = b.execute()
    b.event(b.profile.results_processor, text="digested", delta={b.profile.summary_key: "It printed 1."})
    b.exit_loop()
    b.end_turn()
    return b.build(), execution.index


def test_a_processor_that_is_no_llm_agent_is_not_asked_for_a_model_request() -> None:
    trace, _ = digested_trace(processor_is_llm=False)
    result = run("processor_model_runs", trace)
    assert_na(result, "is not an LlmAgent but a DigestAgent")
    assert "no model request by design" in result.explanation


def test_an_llm_processor_that_skipped_its_model_still_fails() -> None:
    trace, execution = digested_trace(processor_is_llm=True)
    assert_fail(run("processor_model_runs", trace), f"event #{execution}", "sent no model request")


def test_the_trace_records_which_agents_are_llm_agents() -> None:
    class GatedLlm(LlmAgent):
        pass

    tree = LoopAgent(name="loop", sub_agents=[GatedLlm(name="coder", model="gemini-2.5-flash"),
                                              DigestAgent(name="digest")])
    kinds = {a.name: (a.kind, a.llm_agent) for a in describe_agents(tree)}
    assert kinds == {"loop": ("LoopAgent", False), "coder": ("GatedLlm", True), "digest": ("DigestAgent", False)}
