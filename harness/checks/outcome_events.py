"""What a turn's events say about its outcome, for a driver-reported outcome with no state key to compare with.

ADK's LoopAgent ends before its bound only when an event escalates (an exit tool, an agent setting
``actions.escalate``); a final answer the turn produced is in some event of it (a model's text, a value its deltas
wrote) or in an execution record. A driver that reports "final answer X" when no event holds X, "ended by a final
answer" when nothing escalated (the loop ran to its ``max_iterations``), or "max_iterations" after an escalation,
misreports the turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..trace.model import EventRecord, Trace, TurnRecord
from .evidence import name_event, show

ESCALATED_ENDS = ("final_answer", "exit_loop")
"""The scenario's names of a loop ended by an escalation (termination_map's vocabulary)."""
BOUND_END = "max_iterations"


def _leaves(value: Any) -> Iterator[str]:
    """Every scalar in a JSON-like value, as text (a number a delta stores is an answer too: ``FINAL(200)``)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif item is not None:
            yield str(item)


def has_loop(trace: Trace) -> bool:
    return any(a.kind.endswith("LoopAgent") for a in trace.agents)


def turn_events(trace: Trace, turn: TurnRecord) -> list[EventRecord]:
    return [e for e in trace.events if e.session_id == turn.session_id and e.turn == turn.turn and not e.partial]


def answer_unproduced(trace: Trace, turn: TurnRecord, label: str) -> str | None:
    """A problem when the reported final answer is in no event of the turn and no execution record of its session."""
    answer = (turn.outcome.final_answer or "").strip()
    if not answer:
        return None
    events = turn_events(trace, turn)
    if any(answer in e.text for e in events) or any(answer in leaf for e in events for leaf in _leaves(e.emitted_delta)):
        return None
    if any(x.session_id == turn.session_id and x.final_answer is not None and answer in str(x.final_answer)
           for x in trace.executions):
        return None
    return (f"{label}: the driver reports final_answer {show(answer)} but no event of the turn holds it (no model "
            f"text, no value a delta wrote) and no execution of the session returned it")


def end_misreported(trace: Trace, turn: TurnRecord, label: str) -> str | None:
    """A problem when the reported termination contradicts whether an event of the turn escalated."""
    said = turn.outcome.termination
    if said not in (*ESCALATED_ENDS, BOUND_END) or turn.outcome.crash is not None or not has_loop(trace):
        return None
    escalations = [e for e in turn_events(trace, turn) if e.escalate]
    if said in ESCALATED_ENDS and not escalations:
        return (f"{label}: the driver reports termination {show(said)} but no event of the turn escalated (how an "
                f"agent ends ADK's LoopAgent before its bound): the loop ran to its max_iterations")
    if said == BOUND_END and escalations:
        return (f"{label}: the driver reports termination {show(said)} but {name_event(escalations[0])} escalated: "
                f"the loop ended there, before its bound")
    return None
