"""Markdown for a differential report: undeclared differences first, then declared ones with their reasons."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..contract.normalize import VOLATILE

if TYPE_CHECKING:
    from ..contract.compare import Difference
    from .report import DifferentialReport


def _cell(value: Any, limit: int = 80, *, plain: bool = False) -> str:
    """repr() of a value (so 'None', '' and '1' are told apart); ``plain`` for prose. Cut to ``limit``."""
    placeholder = isinstance(value, str) and value.startswith("<") and value.endswith(">")
    text = str(value) if plain or placeholder else repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text)} chars)"
    return text.replace("|", "\\|").replace("\n", "\\n")


def _table(differences: Iterable[Difference], *, with_reason: bool) -> list[str]:
    head = "| scenario | services | event | where | key | value in A | value in B |"
    rows = [head + (" declared as |" if with_reason else ""),
            "|---" * (7 + with_reason) + "|"]
    for d in differences:
        event = "—" if d.event_index is None else str(d.event_index)
        row = (f"| {_cell(d.scenario, plain=True)} | {d.service_a} → {d.service_b} | {event} | {d.where} | {_cell(d.key)} "
               f"| {_cell(d.value_a)} | {_cell(d.value_b)} |")
        rows.append(row + (f" {_cell(d.declared, 160, plain=True)} |" if with_reason else ""))
    return rows


def render_differential_markdown(report: DifferentialReport) -> str:
    base, others = report.services[0], report.services[1:]
    lines = [
        "# Session-service differential",
        "",
        (f"Baseline `{base}` compared with {', '.join(f'`{s}`' for s in others)} on {len(report.scenarios)} "
         f"scenarios and probes. **{len(report.undeclared)} undeclared** difference(s), "
         f"{len(report.declared)} declared, {len(report.errors)} failed run(s)."),
        "",
        "## Undeclared differences",
        "",
    ]
    lines += _table(report.undeclared, with_reason=False) if report.undeclared else ["None."]
    if report.errors:
        lines += ["", "## Failed runs", "", *(f"* {_cell(e, 400, plain=True)}" for e in report.errors)]
    lines += ["", "## Declared divergences (found in this run)", ""]
    lines += _table(report.declared, with_reason=True) if report.declared else ["None."]
    lines += ["", "## What each service declares", "", "| service | divergence | reason |", "|---|---|---|"]
    for service, entries in report.declarations.items():
        for key, reason in entries.items():
            lines.append(f"| {service} | {key} | {_cell(reason, 300, plain=True)} |")
        if not entries:
            lines.append(f"| {service} | — | declares none |")
    lines += ["", "Normalised before comparing: " + "; ".join(f"{what} → `{to}`" for what, to in VOLATILE) + "."]
    return "\n".join(lines) + "\n"
