"""The loop sequences its sub-agents; nobody transfers."""

from __future__ import annotations

from ..targets.profile import TargetProfile
from ..trace.model import Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event

NAME = "loop_without_transfers"
TRANSFER_TOOL = "transfer_to_agent"


def loop_members(trace: Trace, profile: TargetProfile) -> tuple[set[str], set[str]]:
    """(the loops judged, the agents inside them): the profile's loop_agent, else every LoopAgent of the tree.

    With a mapped loop_agent, the profile's roles count as inside it even when the trace lists no agent tree.
    """
    if profile.loop_agent is not None:
        loops = {profile.loop_agent}
    else:
        loops = {a.name for a in trace.agents if a.kind.endswith("LoopAgent")}
    children: dict[str, set[str]] = {}
    for agent in trace.agents:
        if agent.parent is not None:
            children.setdefault(agent.parent, set()).add(agent.name)
    inside: set[str] = set()
    todo = list(loops)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in inside:
                inside.add(child)
                todo.append(child)
    if profile.loop_agent is not None:
        inside |= {r for r in (profile.analyst, profile.job_builder, profile.results_processor) if r is not None}
    return loops, inside


@check(
    NAME,
    title="No agent transfers inside the loop",
    why="In ADK 2.x an agent may not transfer to a sibling under a non-LLM parent such as a LoopAgent "
        "('Agent X is not allowed to transfer to agent Y'). The loop (profile loop_agent, else every LoopAgent) "
        "must sequence its sub-agents (analyst -> executor -> summariser) by itself.",
    dod_item="design: let the LoopAgent sequence the sub-agents; no transfers",
)
def loop_without_transfers(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if not trace.events:
        return not_applicable(NAME, "The trace holds no event.")
    loops, inside = loop_members(trace, profile)
    if not loops:
        return not_applicable(NAME, "The agent tree has no LoopAgent (and the profile maps no loop_agent).")
    events = sorted((e for e in trace.events if e.author in inside), key=lambda e: e.index)
    if not events:
        return passed(NAME, f"No transfer: no agent inside {', '.join(sorted(loops))} appended an event "
                            f"({len(trace.events)} event(s) in all).")
    evidence: list[str] = []
    for event in events:
        if event.transfer_to_agent:
            evidence.append(f"{name_event(event)}: transfers to {event.transfer_to_agent!r}")
        elif TRANSFER_TOOL in event.function_calls:
            evidence.append(f"{name_event(event)}: calls {TRANSFER_TOOL}")
    if evidence:
        return failed(NAME, "Agents tried to transfer instead of letting the loop sequence them.", capped(evidence))
    return passed(NAME, f"No transfer in {len(events)} event(s) of the agents inside {', '.join(sorted(loops))}.")
