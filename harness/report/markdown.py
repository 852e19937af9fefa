"""Markdown summary: a scenario × check table (✅ ❌ –), then the evidence of every failure.

Meant for a CI job summary or a pull-request comment. Cell text is escaped
(``|``, HTML, line breaks); evidence goes in fenced blocks long enough for any
backticks it holds, so nothing in it renders as markup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..checks.base import Status
from ..result import RunReport
from .summary import (abbreviations, check_columns, error_lines, failing_checks, run_setups, scenario_status,
                      summary_line)

SYMBOLS = {Status.PASS: "✅", Status.FAIL: "❌", Status.NOT_APPLICABLE: "–"}
SCENARIO_SYMBOLS = {"pass": "✅ pass", "fail": "❌ fail", "error": "⚠️ error", "xfail": "➖ xfail (declared)",
                    "xpass": "❌ XPASS (declared to fail)"}
NOT_RUN = "·"


def _row(cells: list[str]) -> str:
    """One table row: exactly one cell per item, so every row has the header's number of cells."""
    return "| " + " | ".join(cells) + " |"


def _text(value: str) -> str:
    """Escape for Markdown inline text and table cells."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = re.sub(r"([\\`*_\[\]|])", r"\\\1", value)
    return " ".join(value.split())


def _fenced(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", body, fence]


def render_markdown(report: RunReport, *, titles: Mapping[str, str] | None = None) -> str:
    columns = check_columns(report)
    short = abbreviations(columns)
    out = ["# rlm-conformance report", "",
           f"{summary_line(report)} — **{'all passed' if report.ok else 'FAILED'}**", "",
           f"Run {_text(report.started_at)} on {_text(report.machine)}, rlm-conformance {_text(report.tool_version)}.",
           ""]
    if report.extra:
        out += [", ".join(f"{_text(k)}: {_text(v)}" for k, v in report.extra.items()), ""]
    out += [f"Ran against {_text(setup)}." for setup in run_setups(report)] + [""]

    out.append(_row([report.subject, "result", *(short[name] for name in columns)]))
    out.append(_row(["---", "---", *(":-:" for _ in columns)]))
    for result in report.results:
        # A check that did not run (a scenario in error has none) still gets its cell: a row with fewer
        # cells than the header, or a header with more than the delimiter row, is not a table.
        cells = [SYMBOLS[check.status] if (check := result.check(name)) is not None else NOT_RUN for name in columns]
        out.append(_row([_text(result.scenario), SCENARIO_SYMBOLS[scenario_status(result)], *cells]))
    out.append("")
    if columns:
        out += [f"Checks ({NOT_RUN} not run): " + "; ".join(
            f"**{short[n]}** {_text(n)}" + (f" ({_text(titles[n])})" if titles and n in titles else "")
            for n in columns) + ".", ""]

    declared = [r for r in report.results if r.declared is not None]
    if declared:
        out += ["## Declared divergences", ""]
        out += [f"* **{_text(r.scenario)}** — {SCENARIO_SYMBOLS[r.status]}: {_text(r.declared)}" for r in declared]
        out.append("")
    errors = [r for r in report.results if scenario_status(r) == "error"]
    if errors:
        out += ["## Scenarios in error", ""]
        for result in errors:
            lines = [part for line in error_lines(result) for part in line.splitlines()]
            out += [f"### {_text(result.scenario)}", "",
                    f"target {_text(result.target)}, LLM mode {_text(result.llm_mode)}", "",
                    *_fenced(lines or [""]), ""]

    failures = [(r, c) for r in report.results for c in failing_checks(r)]
    if failures:
        out += ["## Failed checks", ""]
        for result, check in failures:
            out += [f"### {_text(result.scenario)}::{_text(check.name)}", "", _text(check.explanation), ""]
            if check.evidence:
                out += [*_fenced(list(check.evidence)), ""]
    return "\n".join(out).rstrip("\n") + "\n"
