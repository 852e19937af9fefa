"""The loop sequences its sub-agents; nobody transfers."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event

NAME = "loop_without_transfers"
TRANSFER_TOOL = "transfer_to_agent"


@check(
    NAME,
    title="No agent transfers inside the loop",
    why="In ADK 2.x an agent may not transfer to a sibling under a non-LLM parent such as a LoopAgent "
        "('Agent X is not allowed to transfer to agent Y'). The loop must sequence analyst -> job_builder -> "
        "results_processor by itself.",
    dod_item="design: let the LoopAgent sequence the sub-agents; no transfers",
)
def loop_without_transfers(ctx: CheckContext) -> CheckResult:
    events = sorted(ctx.trace.events, key=lambda e: e.index)
    if not events:
        return not_applicable(NAME, "The trace holds no event.")
    evidence: list[str] = []
    for event in events:
        if event.transfer_to_agent:
            evidence.append(f"{name_event(event)}: transfers to {event.transfer_to_agent!r}")
        elif TRANSFER_TOOL in event.function_calls:
            evidence.append(f"{name_event(event)}: calls {TRANSFER_TOOL}")
    if evidence:
        return failed(NAME, "Agents tried to transfer instead of letting the loop sequence them.", capped(evidence))
    return passed(NAME, f"No transfer in {len(events)} event(s).")
