"""The terminal summary, sized to the console's width.

By default one line per scenario: its verdict, how many of its checks passed, failed and were n/a, its time, and
the names of its failing checks (those that fit whole, then ``+N more``) or why it could not run. Then each
error with its text and each failure with its message and first evidence lines, indented, and one closing total
line. ``wide`` prints the scenario × check matrix (one column per check) in place of the per-scenario lines, at
the width it needs: squeezed into a terminal, rich would empty its columns. The HTML and Markdown reports always
hold the matrix and every piece of evidence; what the console cuts short points to them.
"""

from __future__ import annotations

import unicodedata

from rich.cells import cell_len
from rich.columns import Columns
from rich.console import Console
from rich.measure import Measurement
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from ..checks.base import CheckResult, Status
from ..result import RunReport, ScenarioResult
from .summary import (abbreviations, check_columns, check_counts, error_headline, error_lines, failing_checks,
                      run_setups, scenario_status, summary_line)

CELLS = {Status.PASS: Text("✓", style="green"), Status.FAIL: Text("✗", style="bold red"),
         Status.NOT_APPLICABLE: Text("–", style="dim")}
RESULT = {"pass": Text("pass", style="green"), "fail": Text("FAIL", style="bold red"),
          "error": Text("ERROR", style="bold yellow"), "xfail": Text("xfail", style="yellow"),
          "xpass": Text("XPASS", style="bold red")}
EVIDENCE_LINES = 3
"""Evidence lines shown under each failure; the reports hold them all."""
EVIDENCE_ROWS = 3
"""Screen rows one evidence line may take before it is cut (``…``)."""
MESSAGE_ROWS = 6
"""Screen rows a check's message may take."""
ERROR_ROWS = 20
"""Screen rows one error line may take: an error is shown whole unless it is a wall of text."""
MAX_FAILURES = 30
"""Failed checks detailed in the terminal; the reports hold every one with all its evidence."""
INDENT = "    "
MIN_TAIL = 12
"""Columns kept for the failing checks when the scenario names are long: ``+N more`` and a short name fit."""
NAMES_ROOM = 30
"""Columns the failing checks should have: below it, the lines leave out each scenario's time."""
GAP = "  "


def render_terminal(report: RunReport, console: Console, *, wide: bool = False, details_in: str | None = None) -> None:
    """Print the per-scenario lines (the matrix with ``wide``), the errors and failures, and the total line.

    ``details_in`` says where the whole evidence is (e.g. ``reports/conformance.html``), for what is cut short.
    """
    where = details_in or "the HTML/Markdown report"
    if wide:
        _print_matrix(report, console)
    else:
        _print_scenario_lines(report, console)
    _print_details(report, console, where)
    console.print()
    for setup in run_setups(report):
        _print_wrapped(console, Text(f"Ran against {setup}.", style="dim"))
    _print_wrapped(console, Text(total_line(report), style="bold green" if report.ok else "bold red"))


def total_line(report: RunReport) -> str:
    """The summary line and the time the scenarios took, added up (with ``-j N`` the run took less)."""
    return f"{summary_line(report)}; {report.subject} time {sum(r.duration_s for r in report.results):.1f}s"


# --- one line per scenario ---------------------------------------------------------------------------------------


def _print_scenario_lines(report: RunReport, console: Console) -> None:
    width = console.width
    rows = [(result, check_counts(result), f"{result.duration_s:.1f}s") for result in report.results]
    number = max([4, *(len(str(n)) for _, counted, _ in rows for n in counted)])
    clock = max([4, *(len(took) for _, _, took in rows)])
    verdict = max(len(text) for text in RESULT.values())
    name = max([len(report.subject), *(cell_len(r.scenario) for r in report.results)])
    fixed = verdict + 1 + len(GAP) + 3 * number + 2 + len(GAP)
    # The failing checks matter more than each scenario's time (the total line adds them up): on a narrow
    # console, the time column goes first.
    timed = width - fixed - name - clock - len(GAP) >= NAMES_ROOM
    if timed:
        fixed += clock + len(GAP)
    name = min(name, max(width - fixed - MIN_TAIL, 8))
    room = width - fixed - name

    header = Text.assemble(" " * verdict, " ", _cell(report.subject, name), GAP,
                           *_numbers(("pass", "fail", "n/a"), number), GAP, "time".rjust(clock) + GAP if timed else "",
                           "failing checks" if any(r.verdict != "pass" for r in report.results) else "",
                           style="dim")
    header.rstrip()
    console.print(_fit(header, width))
    for result, counted, took in rows:
        status = scenario_status(result)
        line = Text.assemble(RESULT[status].copy(), " " * (verdict - len(RESULT[status])), " ",
                             _cell(result.scenario, name), GAP)
        for text, style in zip(_numbers([str(n) for n in counted], number), ("", "red", "dim")):
            line.append(text, style=style if text.strip() != "0" else "")
        line.append(GAP + (took.rjust(clock) + GAP if timed else ""))
        if status == "xpass":
            line.append(_ellipsize("passed, but declared to fail: remove the declaration", room), style="red")
        elif result.verdict == "error":
            line.append(_ellipsize(error_headline(result), room), style="yellow")
        else:
            line.append(fit_names([c.name for c in failing_checks(result)], room), style="red")
        line.rstrip()
        console.print(_fit(line, width))


def fit_names(names: list[str], room: int) -> str:
    """As many of ``names`` as fit whole in ``room`` columns, then ``+N more``: a name is never cut."""
    for shown in range(len(names), -1, -1):
        rest = len(names) - shown
        text = ", ".join([*names[:shown], *([f"+{rest} more"] if rest else [])])
        if cell_len(text) <= room:
            return text
    return ""


def _numbers(values: tuple[str, ...] | list[str], width: int) -> list[str]:
    return [value.rjust(width) + (" " if i < len(values) - 1 else "") for i, value in enumerate(values)]


def _cell(text: str, width: int) -> Text:
    cell = Text(_ellipsize(text, width))
    cell.pad_right(width - cell.cell_len)
    return cell


def _ellipsize(text: str, width: int) -> str:
    text = " ".join(_printable(text).split())
    if cell_len(text) <= width:
        return text
    cut = Text(text)
    cut.truncate(max(width, 0), overflow="ellipsis")
    return cut.plain


def _fit(line: Text, width: int) -> Text:
    line.truncate(width, overflow="ellipsis")
    return line


# --- errors and failures -----------------------------------------------------------------------------------------


def _print_details(report: RunReport, console: Console, where: str) -> None:
    failures = [(r, c) for r in report.results if r.declared is None for c in failing_checks(r)]
    shown = set(map(id, (c for _, c in failures[:MAX_FAILURES])))
    for result in report.results:
        if result.declared is not None:  # a strict xfail: its reason, not its failures (they are the reports')
            console.print()
            label = (f"xfail {result.scenario}: failed as declared ({result.declared})" if result.status == "xfail"
                     else f"XPASS {result.scenario}: passed, but it is declared to fail ({result.declared}); the "
                          f"declaration is stale: remove it")
            _print_wrapped(console, Text(label, style="yellow" if result.status == "xfail" else "bold red"), "",
                           INDENT, rows=4)
            continue
        errors = error_lines(result)
        checks = [c for c in failing_checks(result) if id(c) in shown]
        if not errors and not checks:
            continue
        console.print()
        if errors:
            _print_wrapped(console, Text(f"ERROR {result.scenario}", style="bold yellow"), "", INDENT, rows=3)
            for line in errors:
                _print_wrapped(console, Text(line), INDENT, INDENT, rows=ERROR_ROWS, where=where)
        for check in checks:
            _print_failure(console, result, check, where)
    if len(failures) > MAX_FAILURES:
        console.print()
        _print_wrapped(console, Text(f"… and {len(failures) - MAX_FAILURES} more failed checks: every one, with all "
                                     f"its evidence, is in {where}.", style="bold red"))


def _print_failure(console: Console, result: ScenarioResult, check: CheckResult, where: str) -> None:
    _print_wrapped(console, Text(f"FAIL {result.scenario}::{check.name}", style="bold red"), "", INDENT, rows=3)
    cut = _print_wrapped(console, Text(check.explanation), INDENT, INDENT, rows=MESSAGE_ROWS)
    for line in check.evidence[:EVIDENCE_LINES]:
        cut |= _print_wrapped(console, Text(line, style="dim"), INDENT + "- ", INDENT + "  ", rows=EVIDENCE_ROWS)
    more = len(check.evidence) - EVIDENCE_LINES
    if more > 0:
        _print_wrapped(console, Text(f"… {more} more evidence line{'s' if more > 1 else ''}; all of it in {where}",
                                     style="dim"), INDENT, INDENT)
    elif cut:
        _print_wrapped(console, Text(f"… cut short; all of it in {where}", style="dim"), INDENT, INDENT)


def _print_wrapped(console: Console, text: Text, first: str = "", rest: str = "", *, rows: int | None = None,
                   where: str | None = None) -> bool:
    """Print ``text`` wrapped to the console's width by its words (not where the terminal would break it), the first
    row after ``first`` and the others after ``rest``, in at most ``rows`` rows (the last ending in ``…`` when cut;
    ``where`` then says where the rest is). True if cut."""
    text = Text(_printable(text.plain), style=text.style)
    width = max(console.width - max(cell_len(first), cell_len(rest)), 10)
    lines = list(text.wrap(console, width, overflow="fold"))
    for line in lines:
        line.rstrip()
    cut = rows is not None and len(lines) > rows
    if cut:
        lines = lines[:rows]
        last = lines[-1]
        last.truncate(width - 1)
        last.rstrip()
        last.append("…")
    for i, line in enumerate(lines):
        console.print(_fit(Text.assemble(first if i == 0 else rest, line), console.width))
    if cut and where is not None:
        _print_wrapped(console, Text(f"… cut short; all of it in {where}", style="dim"), rest, rest)
    return cut


def _printable(text: str) -> str:
    """Control characters (an ANSI escape in an evidence line ...) as ``\\x1b``: shown, never obeyed; tabs as spaces."""
    text = text.expandtabs(4)
    if all(ch == "\n" or unicodedata.category(ch) != "Cc" for ch in text):
        return text
    return "".join(ch if ch == "\n" or unicodedata.category(ch) != "Cc" else ch.encode("unicode_escape").decode()
                   for ch in text)


# --- the matrix (--wide) -----------------------------------------------------------------------------------------


def _print_matrix(report: RunReport, console: Console) -> None:
    """The scenario × check table and its legend, the table as wide as it needs (wider than the console if so)."""
    columns = check_columns(report)
    short = abbreviations(columns)
    table = Table(title="rlm-conformance", title_justify="left", show_lines=False)
    table.add_column(report.subject, no_wrap=True)
    for name in columns:
        table.add_column(short[name], justify="center", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for result in report.results:
        cells = [CELLS[check.status] if (check := result.check(name)) is not None else Text(" ") for name in columns]
        table.add_row(Text(result.scenario), *cells, RESULT[scenario_status(result)], f"{result.duration_s:.1f}s")
    needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if needed <= console.width:
        console.print(table)
    else:  # rendered at its own width and printed uncropped: the terminal wraps it, nothing is dropped
        console.print(Segments(console.render(table, console.options.update_width(needed))), crop=False)

    if columns:
        console.print(Columns([Text.assemble((short[name], "bold"), " ", name) for name in columns],
                              column_first=True, padding=(0, 3), title=Text("checks", style="dim")))
