"""One self-contained HTML file: a summary table, then per scenario its checks and state-delta timeline.

Rendered with Jinja2 from ``templates/report.html.j2`` with autoescape on for
every value (the template's name ends in ``.j2``, so ``select_autoescape``
would *not* switch it on: it is forced here). CSS is inline; there is no
script and no external asset, so the file can be attached to a CI run and
opened anywhere. Sections are ``<details>``: failing scenarios start open.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..checks.base import Status
from ..result import RunReport, ScenarioResult
from ..trace.model import Trace
from .summary import abbreviations, check_columns, counts, error_lines, scenario_status, summary_line
from .timeline import build_timeline

TEMPLATE = "report.html.j2"
SECTION = "scenario.html.j2"  # one scenario's section: rendered alone, as its result arrives or with the report
TEMPLATES = Path(__file__).parent / "templates"
STATUS_CLASS = {Status.PASS: "pass", Status.FAIL: "fail", Status.NOT_APPLICABLE: "na"}
STATUS_SYMBOL = {Status.PASS: "✓", Status.FAIL: "✗", Status.NOT_APPLICABLE: "–"}


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _anchor(index: int, name: str) -> str:
    return f"s{index}-" + re.sub(r"[^A-Za-z0-9_-]+", "-", name)


class _ScenarioView(dict):
    """A scenario's template values; the ones from its full trace are read when the template asks for them, so
    a spooled run (harness/run/trace_spool.py) holds one full trace at a time, not all of them."""

    def __init__(self, values: dict[str, Any], trace: Callable[[], Trace | None],
                 section: Callable[[], str] | None = None) -> None:
        super().__init__(values)
        self._trace = trace
        self._section = section

    def __missing__(self, key: str) -> Any:
        if key == "section" and self._section is not None:  # the summary table's row needs none of the trace
            return self._section()
        trace = self._trace()
        if key == "timeline":
            return build_timeline(trace) if trace is not None else []
        if key == "events":
            return len(trace.events) if trace is not None else 0
        if key == "plugins":
            return trace.plugins if trace is not None else []
        if key == "executions":
            return trace.executions if trace is not None else []
        raise KeyError(key)


def _section_values(index: int, result: ScenarioResult) -> dict[str, Any]:
    return {"anchor": _anchor(index, result.scenario), "result": result, "status": scenario_status(result),
            "failed": sum(1 for c in result.checks if c.status is Status.FAIL), "errors": error_lines(result)}


def scenario_section(index: int, result: ScenarioResult, trace: Callable[[], Trace | None], *,
                     titles: Mapping[str, str], subject: str) -> str:
    """The ``<details>`` section of ``results[index]``, HTML (``trace`` reads its full trace when the section shows
    it); report.html.j2 places it as it is (``|safe``): its values were escaped as it was rendered."""
    view = _ScenarioView(_section_values(index, result), trace)
    return _environment().get_template(SECTION).render(
        s=view, titles=titles, subject=subject, status_class=STATUS_CLASS, status_symbol=STATUS_SYMBOL)


def _scenario_view(index: int, result: ScenarioResult, columns: list[str], report: RunReport,
                   titles: Mapping[str, str]) -> dict[str, Any]:
    def section() -> str:
        piece = report.piece_at(index, "html")
        return scenario_section(index, result, lambda: report.trace_at(index), titles=titles,
                                subject=report.subject) if piece is None else piece

    return _ScenarioView({**_section_values(index, result), "cells": [(name, result.check(name)) for name in columns]},
                         lambda: report.trace_at(index), section=section)


def render_html(report: RunReport, *, titles: Mapping[str, str] | None = None) -> str:
    return "".join(iter_html(report, titles=titles))


def iter_html(report: RunReport, *, titles: Mapping[str, str] | None = None) -> Iterator[str]:
    """``render_html``'s text in pieces as the template produces them (Jinja2's ``generate``), so a writer that
    streams them to a file holds neither the text nor more than one scenario's full trace."""
    columns = check_columns(report)
    titles = dict(titles or {})
    context = {
        "report": report, "columns": columns, "short": abbreviations(columns), "titles": titles,
        "counts": counts(report), "summary": summary_line(report),
        "scenarios": [_scenario_view(i, r, columns, report, titles) for i, r in enumerate(report.results)],
        "status_class": STATUS_CLASS, "status_symbol": STATUS_SYMBOL,
    }
    return _environment().get_template(TEMPLATE).generate(context)
