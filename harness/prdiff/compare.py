"""``diff_runs``: two runs compared scenario by scenario, each regression tied to the state change behind it."""

from __future__ import annotations

import dataclasses

from ..report.summary import error_lines
from ..result import RunReport, ScenarioResult
from ..trace.model import Trace
from .model import FindingChange, RunDiff, ScenarioDiff, StateChange, VerdictChange
from .requests import request_drift
from ..snapshot.state_diff import state_changes
from .verdicts import check_changes, finding_changes, scenario_change, sort_verdicts


def _by_name(report: RunReport) -> dict[str, tuple[ScenarioResult, Trace | None]]:
    return {r.scenario: (r, report.trace_at(i)) for i, r in enumerate(report.results)}


def _meta(report: RunReport) -> dict[str, str]:
    return {"started_at": report.started_at, "tool_version": report.tool_version, "machine": report.machine,
            **{k: v for k, v in report.extra.items() if k in ("target", "llm_mode", "command")}}


def state_behind(verdict: VerdictChange, state: list[StateChange], findings: list[FindingChange]) -> StateChange | None:
    """The state change a regression is about. The earliest event whose delta changed (what came after it follows
    from it: a stale key left behind makes a processor run again), a key there the check's explanation or new
    evidence names first; but a key that evidence names which only storage shows (a row, the final state: a service
    that now keeps a ``temp:`` key) before that. Without an event change: storage's, likewise. None: nothing changed."""
    said = " ".join([verdict.explanation, *(f.text for f in findings if f.check == verdict.check)])
    events = [c for c in state if c.delta in ("emitted", "appended")]
    stored = [c for c in state if c.delta in ("row", "persisted")]
    in_events = {c.key for c in events}
    named_in_storage = [c for c in stored if c.key is not None and c.key in said and c.key not in in_events]
    for group in (events, stored):
        if group:
            first = [c for c in group if c.place == group[0].place]
            named = [c for c in first if c.key is not None and c.key in said]
            return (named or named_in_storage or first)[0]
    return None


def diff_scenario(name: str, base: tuple[ScenarioResult, Trace | None] | None,
                  head: tuple[ScenarioResult, Trace | None] | None) -> ScenarioDiff:
    base_result, base_trace = base if base is not None else (None, None)
    head_result, head_trace = head if head is not None else (None, None)
    if base_result is not None:
        base_result = dataclasses.replace(base_result, trace=base_trace)
    if head_result is not None:
        head_result = dataclasses.replace(head_result, trace=head_trace)
    whole = scenario_change(base_result, head_result)
    state = state_changes(base_trace, head_trace)
    findings = finding_changes(base_result, head_result)
    verdicts = ([whole] if whole is not None else []) + check_changes(base_result, head_result)
    verdicts = [dataclasses.replace(v, state=state_behind(v, state, findings)) if v.kind == "regression" else v
                for v in verdicts]
    return ScenarioDiff(
        scenario=name, before=base_result.status if base_result else None,
        after=head_result.status if head_result else None,
        verdicts=sort_verdicts(verdicts), state=state,
        requests=request_drift(base_trace, head_trace), findings=findings,
        error="\n".join(error_lines(head_result)) if head_result is not None and head_result.verdict == "error"
        else None)


SHARD_KEY = "shard"
"""The ``extra`` entry of a ``run --shard I/N`` report: its label."""


def diff_runs(base: RunReport, head: RunReport, *, base_label: str = "BASE", head_label: str = "HEAD") -> RunDiff:
    """Scenario by scenario, HEAD's order then BASE's vanished ones. When either run is a shard (``run --shard``),
    only the scenarios both ran are compared: a scenario missing from one side may sit in another shard (the split
    follows the selection), so it is counted in ``not_compared``, never called vanished or added."""
    old, new = _by_name(base), _by_name(head)
    names = [*new, *(n for n in old if n not in new)]
    not_compared: dict[str, int] = {}
    shards = [r.extra[SHARD_KEY] for r in (base, head) if r.extra.get(SHARD_KEY)]
    if shards:
        not_compared = {"base": sum(1 for n in old if n not in new), "head": sum(1 for n in new if n not in old),
                        "shards": " and ".join(dict.fromkeys(shards))}
        names = [n for n in names if n in old and n in new]
    return RunDiff(base=base_label, head=head_label, scenarios=[diff_scenario(n, old.get(n), new.get(n)) for n in names],
                   base_meta=_meta(base), head_meta=_meta(head), not_compared=not_compared)
