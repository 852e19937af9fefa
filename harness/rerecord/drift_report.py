"""The drift report of a re-recording: per scenario, which model requests and answers changed
(harness/recording/cassette_diff.py), and what that did — the scenario replayed on the old cassette and on the new
one, their verdicts per check and their state compared key by key (each event's state delta as its author emitted
it, and the state stored at the end of each session), with what a run draws afresh (ids, wall clock, temporary
paths) rewritten by the snapshot's table (harness/snapshot/normalize.py).

Both replays accept drift (``allow_drift``): the old cassette is played to today's agent, as ``run --allow-drift``
would, so the two runs differ only in the answers. Written as Markdown (for a pull request) and JSON, atomically.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import write_atomic
from ..llm.fresh_values import mask_fresh_values
from ..recording.cassette_diff import CallChange, compare_cassettes

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from ..run.options import RunOptions
    from ..scenario.models import Scenario
    from ..trace.model import Trace

MARKDOWN_NAME, JSON_NAME = "cassette-drift.md", "cassette-drift.json"
_VALUE_CHARS = 120


@dataclass(frozen=True)
class StateChange:
    where: str  # "event 4 by results_processor", "stored state of session 1"
    key: str
    old: str  # the value as JSON ("(absent)" when the key was not there)
    new: str


@dataclass(frozen=True)
class CheckChange:
    check: str
    old: str
    new: str


@dataclass(frozen=True)
class ScenarioDrift:
    scenario: str
    old_cassette: str
    new_cassette: str
    identity: list[str] = field(default_factory=list)
    calls: list[CallChange] = field(default_factory=list)
    verdict: tuple[str, str] = ("", "")  # the scenario's status replayed on the old / the new cassette
    checks: list[CheckChange] = field(default_factory=list)
    state: list[StateChange] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # why a replay could not be judged

    @property
    def changed(self) -> bool:
        return bool(self.identity or self.calls)


def cassette_changes(scenario: str, old: Path, new: Path) -> ScenarioDrift:
    """The recordings compared, before any replay: enough to tell an unchanged re-recording from a changed one."""
    identity, calls = compare_cassettes(old, new)
    return ScenarioDrift(scenario=scenario, old_cassette=str(old), new_cassette=str(new), identity=identity,
                         calls=calls)


def with_replays(drift: ScenarioDrift, scenario: Scenario, options: RunOptions, *, old_root: Path,
                 new_root: Path) -> ScenarioDrift:
    """``drift`` with the scenario replayed on the old cassette folder and on the new one, compared."""
    from ..llm.modes import LlmMode
    from ..run.scenario_run import run_one

    replay = replace(options, llm_mode=LlmMode.REPLAY, record=False, allow_drift=True)
    old = run_one(scenario, replace(replay, cassette_dir=old_root), None)
    new = run_one(scenario, replace(replay, cassette_dir=new_root), None)
    return replace(drift, verdict=(old.status, new.status), checks=check_changes(old, new),
                   state=state_changes(old.trace, new.trace),
                   errors=[f"{side} cassette: {r.error}" for side, r in (("old", old), ("new", new)) if r.error])


def check_changes(old: ScenarioResult, new: ScenarioResult) -> list[CheckChange]:
    before = {c.name: c.status.value for c in old.checks}
    after = {c.name: c.status.value for c in new.checks}
    return [CheckChange(name, before.get(name, "(absent)"), after.get(name, "(absent)"))
            for name in dict.fromkeys([*before, *after]) if before.get(name) != after.get(name)]


def state_changes(old: Trace | None, new: Trace | None) -> list[StateChange]:
    """Key by key, as ``diff`` compares two runs (harness/snapshot/state_diff.py: events matched as a sequence,
    storage's rows, the state stored at the end; ids, clock and paths normalised), each value shown as JSON."""
    from ..snapshot.state_diff import state_changes as compared

    return [StateChange(f"{c.place} by {c.author}" if c.author else c.place, str(c.key),
                        _shown(c.before) if c.held != "head" else "(absent)",
                        _shown(c.after) if c.held != "base" else "(absent)")
            for c in compared(old, new) if c.key is not None]


def _shown(value: Any) -> str:
    return mask_fresh_values(json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr))


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 1] + "…"


def render_markdown(drifts: Sequence[ScenarioDrift], *, pending: str, accept: str) -> str:
    lines = [f"# Cassette drift: {len(drifts)} re-recorded scenario(s) pending review", "",
             f"The new cassettes are in `{pending}`; nothing was replaced. Accept them with `{accept}`, or delete "
             f"`{pending}` to keep the old ones. Verdicts and state: the scenario replayed on each cassette "
             "(drift allowed).", "",
             "| scenario | requests changed | answers changed | verdict old → new | checks changed | state keys changed |",
             "|---|---|---|---|---|---|"]
    for d in drifts:
        requests = sum(c.kind in ("request", "added", "removed") for c in d.calls)
        answers = sum(c.kind == "answer" for c in d.calls)
        keys = ", ".join(f"`{k}`" for k in dict.fromkeys(s.key for s in d.state)) or "—"
        lines.append(f"| {d.scenario} | {requests} | {answers} | {d.verdict[0]} → {d.verdict[1]} | {len(d.checks)} "
                     f"| {keys} |")
    for d in drifts:
        lines += ["", f"## {d.scenario}", "", f"`{d.old_cassette}` → `{d.new_cassette}`", ""]
        lines += [f"- scenario identity changed: {part}" for part in d.identity]
        for change in d.calls:
            if change.kind in ("added", "removed"):
                lines.append(f"- **{change.kind} call**: {_cut(change.describe())}")
            else:
                lines.append(f"- **{change.kind} changed**, {change.caller[:60]} call #{change.call + 1}: "
                             f"`{_cut(change.old)}` → `{_cut(change.new)}`")
        lines += [f"- **check** {c.check}: {c.old} → {c.new}" for c in d.checks]
        lines += [f"- **state** {s.where}, `{s.key}`: `{_cut(s.old)}` → `{_cut(s.new)}`" for s in d.state]
        lines += [f"- could not judge: {_cut(e)}" for e in d.errors]
    return "\n".join(lines) + "\n"


def render_json(drifts: Sequence[ScenarioDrift], *, pending: str, accept: str) -> str:
    return json.dumps({"format": "rlm-conformance-cassette-drift", "version": 1, "pending": pending,
                       "accept": accept, "scenarios": [asdict(d) for d in drifts]}, indent=2, ensure_ascii=False) + "\n"


def write_drift_report(drifts: Sequence[ScenarioDrift], out_dir: Path, *, pending: str,
                       accept: str) -> tuple[Path, Path]:
    from ..report.json_report import ReportError

    out_dir = Path(out_dir)
    paths = (out_dir / MARKDOWN_NAME, out_dir / JSON_NAME)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(paths[0], render_markdown(drifts, pending=pending, accept=accept).encode("utf-8"), mode=0o644)
        write_atomic(paths[1], render_json(drifts, pending=pending, accept=accept).encode("utf-8"), mode=0o644)
    except OSError as exc:
        raise ReportError(f"cannot write the drift report into {out_dir} ({exc.strerror or exc}). Fix: pass a "
                          f"writable --reports-dir.") from None
    return paths
