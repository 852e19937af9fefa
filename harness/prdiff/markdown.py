"""The diff as Markdown for a pull-request comment: one headline naming the first regression (scenario, check,
state key), a summary table (regressions first), then one folded ``<details>`` block per changed scenario.

Sized to fit: GitHub refuses a comment over 65,536 characters, so the text stays under ``max_chars`` (60,000 by
default): details that do not fit are left out, then table rows, each time with a note saying how many and where
the rest is (the ``--json`` file, the HTML report).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .model import RunDiff, ScenarioDiff, StateChange, VerdictChange
from .verdicts import verdict_rank

COMMENT_LIMIT = 65_536
"""GitHub's limit on an issue or pull-request comment body, in characters."""
DEFAULT_MAX_CHARS = 60_000
SYMBOL = {"regression": "❌", "improvement": "✅", "change": "➖"}
STATE_ROWS = 40  # per scenario's details
VALUE_CHARS = 80


def _text(value: str) -> str:
    """Inline Markdown text or a table cell: HTML, markup characters and line breaks made harmless."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(re.sub(r"([\\`*_\[\]|])", r"\\\1", value).split())


def _code(value: str) -> str:
    """``value`` as inline code (in a table cell too: its pipes escaped, its backticks fenced around)."""
    value = " ".join(value.split()).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr) if not isinstance(value, str) else repr(value)
    return _code(text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + f"… ({len(text)} chars)")


def _side(change: StateChange, side: str) -> str:
    """A value of one side, or ``—`` where that side does not hold the key (a null is a delete: shown)."""
    if change.held not in ("both", side):
        return "—"
    return _value(change.before if side == "base" else change.after)


def _fenced(lines: Iterable[str], language: str = "text") -> list[str]:
    body = "\n".join(lines)
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", body)), default=0) + 1)
    return [f"{fence}{language}", body, fence]


def _verdict(v: VerdictChange) -> str:
    return f"{v.before or 'not run'} → {v.after or 'gone'}"


def state_words(change: StateChange) -> str:
    """``no longer deleted by digest (turn 0, event 5)``; persisted state: ``now persisted (persisted ... of s)``."""
    who = f" by {change.author}" if change.author else ""
    where = change.place + ("" if change.delta != "appended" else ", as the service kept it")
    return f"{change.change}{who} ({where})"


def _regressions(diff: RunDiff) -> list[tuple[ScenarioDiff, VerdictChange]]:
    """Every regression, checks before harness rows across scenarios (a snapshot fails *because* a check's state
    changed), in HEAD's scenario order."""
    found = [(s, v) for s in diff.scenarios for v in s.regressions]
    return sorted(found, key=lambda sv: verdict_rank(sv[1]))


def headline(diff: RunDiff) -> str:
    """The comment's first line after its title: the first regression, named by scenario, check and state key."""
    first = next(iter(_regressions(diff)), None)
    if first is None:
        changed = diff.changed
        if not changed:
            return f"No change: {len(diff.scenarios)} scenario(s), same verdicts, state deltas and model requests."
        return f"No regression; {len(changed)} of {len(diff.scenarios)} scenario(s) changed (below)."
    scenario, verdict = first
    count = sum(len(s.regressions) for s in diff.scenarios)
    state = (f"state key {_code(verdict.state.key)} {_text(state_words(verdict.state))}" if verdict.state is not None
             and verdict.state.key is not None else "no state key changed")
    what = "the scenario" if verdict.check == "scenario" else f"check {_code(verdict.check)}"
    return (f"❌ **Regression** in {_code(scenario.scenario)}: {what} {_verdict(verdict)}; {state}"
            + (f" — {count} regression(s) in all." if count > 1 else "."))


def _row(s: ScenarioDiff, v: VerdictChange) -> str:
    key = v.state.key if v.state is not None and v.state.key is not None else None
    what = _text(state_words(v.state) if v.state is not None else v.explanation[:160])
    more = len({c.key for c in s.state}) - 1 if v.state is not None else 0
    what += f"; {more} more key(s) changed" if more > 0 else ""
    check = "(scenario)" if v.check == "scenario" else _code(v.check)
    return f"| {SYMBOL[v.kind]} | {_code(s.scenario)} | {check} | {_verdict(v)} | {_code(key) if key else '—'} | {what} |"


def _rows(diff: RunDiff) -> list[str]:
    """Regressions first (as the headline orders them), then improvements and changes, then scenarios whose
    verdicts held but whose state, requests or findings changed."""
    rows = [(verdict_rank(v), i, _row(s, v)) for i, s in enumerate(diff.scenarios) for v in s.verdicts]
    for i, s in enumerate(diff.scenarios):
        if not s.verdicts and s.changed:
            parts = ([f"{len(s.state)} state change(s)"] if s.state else []) + (
                [f"model requests of {', '.join(d.agent for d in s.requests)}"] if s.requests else []) + (
                [f"{len(s.findings)} finding(s) new or gone"] if s.findings else [])
            key = next((c.key for c in s.state if c.key is not None), None)
            rows.append(((3, 0), i, f"| ➖ | {_code(s.scenario)} | — | {s.after or 'gone'} (unchanged) | "
                                    f"{_code(key) if key else '—'} | {_text(', '.join(parts))} |"))
    return [row for _, _, row in sorted(rows, key=lambda r: (r[0], r[1]))]


def scenario_details(s: ScenarioDiff) -> list[str]:
    counts = [f"{len(s.regressions)} regression(s)"] if s.regressions else []
    counts += [f"{len(s.state)} state change(s)"] if s.state else []
    counts += [f"requests of {len(s.requests)} agent(s)"] if s.requests else []
    counts += [f"{len(s.findings)} finding(s)"] if s.findings else []
    out = ["<details>", f"<summary>{_text(s.scenario)}: {_text(s.before or 'not run')} → {_text(s.after or 'gone')}"
                        f"{' — ' + _text(', '.join(counts)) if counts else ''}</summary>", ""]
    for v in s.verdicts:
        check = "the scenario" if v.check == "scenario" else _code(v.check)
        out.append(f"* {SYMBOL[v.kind]} {check}: {_verdict(v)} — {_text(v.explanation)[:400]}")
    if s.verdicts:
        out.append("")
    if s.error:
        out += ["Why HEAD could not judge it:", "", *_fenced(s.error.splitlines()), ""]
    if s.state:
        out += ["| where | key | what changed | BASE | HEAD |", "|---|---|---|---|---|"]
        for c in s.state[:STATE_ROWS]:
            out.append(f"| {_text(c.place)} | {_code(c.key) if c.key else '—'} | {_text(c.change)}"
                       f"{' by ' + _text(c.author) if c.author else ''} | {_side(c, 'base')} | {_side(c, 'head')} |")
        if len(s.state) > STATE_ROWS:
            out.append(f"\n… and {len(s.state) - STATE_ROWS} more state change(s) (`--json`).")
        out.append("")
    for d in s.requests:
        out.append(f"* model requests of {_code(d.agent)}: {d.count_before} → {d.count_after}"
                   + (f", {len(d.changed)} body(ies) changed" if d.changed else ""))
    if s.requests:
        changed = [f"{d.agent} {line}" for d in s.requests for line in d.changed]
        out += [""] + (_fenced(changed[:20] + ([f"… {len(changed) - 20} more"] if len(changed) > 20 else []))
                       if changed else [])
        out.append("")
    if s.findings:
        out += ["Findings (evidence of failing checks), new (+) and vanished (-):", "",
                *_fenced([f"{'+' if f.change == 'new' else '-'} {f.check}: {f.text[:300]}" for f in s.findings[:30]]
                         + ([f"… {len(s.findings) - 30} more"] if len(s.findings) > 30 else []), "diff"), ""]
    return out + ["</details>", ""]


def _length(lines: list[str]) -> int:
    """The characters of ``"\\n".join(lines)``."""
    return sum(len(line) for line in lines) + max(len(lines) - 1, 0)


def render_diff_markdown(diff: RunDiff, *, report_url: str | None = None,
                         max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The comment's text, at most ``max_chars`` characters long."""
    regressions = sum(len(s.regressions) for s in diff.scenarios)
    head = ["## rlm-conformance: what this change did", "", headline(diff), ""]
    line = (f"{len(diff.scenarios)} scenario(s), base {_code(diff.base)} → head {_code(diff.head)}: "
            f"{regressions} regression(s), {len(diff.changed)} changed.")
    if report_url:
        line += f" [Full HTML report]({report_url.replace(')', '%29').replace(' ', '%20')})"
    head += [line, ""]
    if diff.not_compared:
        left = diff.not_compared
        head += [f"Sharded run ({_text(left['shards'])}): only the scenarios both runs hold are compared; "
                 f"{left['base']} only in base and {left['head']} only in head are left out (another shard may "
                 f"hold them: `rlm-conformance merge` the shards and diff the merged reports to compare them).", ""]
    rows = _rows(diff)
    table = ["| | scenario | check | verdict | state key | what changed |", "|---|---|---|---|---|---|"] if rows else []
    note_room = 300
    room = max_chars - note_room - _length(head)
    kept_rows: list[str] = []
    for row in rows:
        room -= len(row) + 1
        if room - _length(table) < 0:
            break
        kept_rows.append(row)
    body = table + kept_rows + ([""] if rows else [])
    notes = []
    if len(kept_rows) < len(rows):
        notes.append(f"{len(rows) - len(kept_rows)} more row(s)")
    details: list[str] = []
    room = max_chars - note_room - _length(head + body)
    left_out = 0
    ranked = sorted(enumerate(diff.changed), key=lambda iv: (min((verdict_rank(v) for v in iv[1].verdicts),
                                                                  default=(3, 0)), iv[0]))
    for _, s in ranked:  # in the table's order: the headline's scenario first
        block = scenario_details(s)
        if _length(block) + 1 > room:
            left_out += 1
            continue
        details += block
        room -= _length(block) + 1
    if left_out:
        notes.append(f"the details of {left_out} scenario(s)")
    out = head + body + details
    if notes:
        where = "the `--json` file" + (" and the HTML report" if report_url else "")
        out.append(f"*Cut to fit a comment: {' and '.join(notes)} left out; all of it is in {where}.*")
    text = "\n".join(out).rstrip("\n") + "\n"
    return text if len(text) <= max_chars else text[:max_chars - 40] + "\n\n*… cut to fit a comment.*\n"
