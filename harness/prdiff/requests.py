"""Model-request drift of one scenario: per agent, how many requests it sent and which bodies changed (system
instruction, contents, tools), with what the run drew afresh (ids, paths, clock times) normalised away."""

from __future__ import annotations

import difflib

from ..snapshot.normalize import normalize_state
from ..trace.model import LlmRequestRecord, Trace
from .model import RequestDrift

PARTS = (("system_instruction", "system instruction"), ("contents_text", "contents"), ("tools", "tools"))
LINE_CHARS = 160


def _bodies(trace: Trace) -> dict[str, list[dict[str, object]]]:
    by_agent: dict[str, list[dict[str, object]]] = {}
    for request in trace.llm_requests:
        by_agent.setdefault(request.agent, []).append(_body(request, trace))
    return by_agent


def _body(request: LlmRequestRecord, trace: Trace) -> dict[str, object]:
    raw = {field: getattr(request, field) for field, _ in PARTS}
    return {**normalize_state(raw, trace), "turn": request.turn}


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"


def _first_difference(before: object, after: object) -> str:
    """The first lines that differ, as ``- old / + new`` (a list, such as tools, compared as its repr)."""
    old = (before if isinstance(before, str) else repr(before)).splitlines()
    new = (after if isinstance(after, str) else repr(after)).splitlines()
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op != "equal":
            pair = ([f"- {_cut(old[a0])}"] if a1 > a0 else []) + ([f"+ {_cut(new[b0])}"] if b1 > b0 else [])
            return " / ".join(pair)
    return "whitespace only"


def request_drift(base: Trace | None, head: Trace | None) -> list[RequestDrift]:
    """Agents whose requests changed in number or body, in HEAD's order of first request."""
    if base is None or head is None:
        return []
    old, new = _bodies(base), _bodies(head)
    drift = []
    for agent in [*new, *(a for a in old if a not in new)]:
        before, after = old.get(agent, []), new.get(agent, [])
        changed = []
        for i, (a, b) in enumerate(zip(before, after), start=1):
            for field, label in PARTS:
                if a[field] != b[field]:
                    changed.append(f"#{i} (turn {b['turn']}) {label}: {_first_difference(a[field], b[field])}")
        if changed or len(before) != len(after):
            drift.append(RequestDrift(agent, len(before), len(after), tuple(changed)))
    return drift
