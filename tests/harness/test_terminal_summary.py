"""The console summary of run/record/report/audit: one line per scenario that fits the console's width, then each
failure with its message and first evidence lines, each error with its text, and the total line; ``--wide`` prints
the scenario × check matrix instead of the per-scenario lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import happy_trace, make_context
from harness.cli import build_parser, main
from harness.report import load_report_json, render_terminal, write_reports
from harness.report.summary import abbreviations, check_columns, summary_line
from harness.report.terminal import EVIDENCE_LINES
from harness.result import RunReport, ScenarioResult

PASSING, FAILING, BROKEN = "single_delegation", "executor_environment_one_shot_x", "cannot_run"
N_FAILING = 9
ERROR = ("Scenario 'cannot_run': cassette cassettes/reference/cannot_run.yaml does not exist, and replay never "
         "records. The scenario's script was changed after it was recorded, or it was never recorded on this "
         "machine. Record it with: rlm-conformance record --scenario cannot_run END-OF-ERROR")
WHERE = "reports/conformance.html"
WIDTHS = (80, 100, 200)


def _explanation(name: str) -> str:
    return f"{name} broke: the analyst's third turn wrote a key the profile says only the executor may write, twice"


def _evidence(name: str, i: int) -> str:
    return (f"{name}-evidence-{i}: event e-{i:04d} (author code_executor, turn 2, seq {i}) wrote "
            + "rlm:artifact:0123456789abcdef " * 8 + f"end-{name}-{i}")


def _result(name: str, checks: list[CheckResult], error: str | None = None) -> ScenarioResult:
    return ScenarioResult(scenario=name, description=f"The {name} scenario.", target="reference", llm_mode="replay",
                          session_service="delta", checks=tuple(checks), trace=None, duration_s=12.345, error=error)


def _failing_checks() -> list[CheckResult]:
    checks = list(run_checks(make_context(happy_trace())))
    for i in range(N_FAILING):
        name = checks[i].name
        checks[i] = CheckResult(name, Status.FAIL, _explanation(name), tuple(_evidence(name, j) for j in range(10)))
    return checks


@pytest.fixture(scope="module")
def report() -> RunReport:
    good = _result(PASSING, list(run_checks(make_context(happy_trace()))))
    return RunReport(results=(good, _result(FAILING, _failing_checks()), _result(BROKEN, [], error=ERROR)),
                     started_at="2026-01-02T03:04:05+00:00", machine="ci-box", tool_version="0.1.0")


def _render(report: RunReport, width: int, soft_wrap: bool = False, **options: object) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None, highlight=False,
                      soft_wrap=soft_wrap)
    render_terminal(report, console, **options)
    return console.export_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _failed(report: RunReport) -> list[tuple[str, CheckResult]]:
    return [(r.scenario, c) for r in report.results for c in r.checks if c.status is Status.FAIL]


@pytest.mark.parametrize("soft_wrap", [False, True])
@pytest.mark.parametrize("width", WIDTHS)
def test_no_line_is_wider_than_the_console(report: RunReport, width: int, soft_wrap: bool) -> None:
    # With soft_wrap rich neither wraps nor crops what it prints: every line must have been fitted by the renderer
    # (a line rich has to break falls apart wherever the width cuts it).
    text = _render(report, width, details_in=WHERE, soft_wrap=soft_wrap)
    too_wide = [line for line in text.splitlines() if cell_len(line) > width]
    assert too_wide == []


@pytest.mark.parametrize("width", WIDTHS)
def test_each_scenario_has_one_line_with_its_verdict_counts_and_failing_checks(report: RunReport,
                                                                                 width: int) -> None:
    lines = _render(report, width, details_in=WHERE).splitlines()
    verdicts = {PASSING: "pass", FAILING: "FAIL", BROKEN: "ERROR"}
    for result in report.results:
        [line] = [line for line in lines if line.split()[:2] == [verdicts[result.scenario], result.scenario]
                  and line.split()[2:3] != []]  # not the ERROR heading of the details
        statuses = [c.status for c in result.checks]
        counts = [str(statuses.count(s)) for s in (Status.PASS, Status.FAIL, Status.NOT_APPLICABLE)]
        assert line.split()[2:5] == counts, line
        # at 80 columns the failing checks get the room of the scenario's time (the total line has the sum)
        assert ("12.3s" in line.split()) == (width > 80), line
        if result.scenario == FAILING:
            # the failing checks, as many as fit whole, then how many more: never a name cut or wrapped
            tail = " ".join(line.split()[6 if width > 80 else 5:])
            assert line.endswith(tail)
            names = tail.split(", ")
            more = int(names.pop()[1:-len(" more")]) if names[-1].endswith(" more") else 0
            failing = [c.name for c in result.checks if c.status is Status.FAIL]
            assert names == failing[:len(names)] and len(names) + more == N_FAILING, line
            if more:  # one name more would not have fit
                longer = ", ".join([*failing[:len(names) + 1], *([f"+{more - 1} more"] if more > 1 else [])])
                assert cell_len(line) - cell_len(tail) + cell_len(longer) > width, line
            assert len(names) >= {80: 0, 100: 1, 200: 6}[width], line
        if result.scenario == BROKEN:
            tail = " ".join(line.split()[6 if width > 80 else 5:])  # the error's start, cut to fit
            assert tail.endswith("…") and f"could not run: {ERROR}".startswith(tail[:-1]) and len(tail) > 20, line


@pytest.mark.parametrize("width", WIDTHS)
def test_each_failure_shows_its_check_message_and_first_evidence(report: RunReport, width: int) -> None:
    text = _render(report, width, details_in=WHERE)
    lines = text.splitlines()
    for scenario, check in _failed(report):
        [at] = [i for i, line in enumerate(lines) if line == f"FAIL {scenario}::{check.name}"]
        block = []
        for line in lines[at + 1:]:
            if not line.startswith("    "):
                break
            block.append(line)
        flat = _flat("\n".join(block))
        assert flat.startswith(check.explanation), flat
        for j in range(EVIDENCE_LINES):  # the first evidence lines, from their start
            assert f"- {check.name}-evidence-{j}: event e-{j:04d}" in flat
        assert f"{check.name}-evidence-{EVIDENCE_LINES}" not in flat  # the rest is in the reports
        assert block[-1].strip() == f"… {10 - EVIDENCE_LINES} more evidence lines; all of it in {WHERE}"


@pytest.mark.parametrize("width", WIDTHS)
def test_an_error_shows_its_whole_text(report: RunReport, width: int) -> None:
    text = _render(report, width, details_in=WHERE)
    assert f"ERROR {BROKEN}" in text.splitlines()
    assert f"could not run: {ERROR}" in _flat(text)


def test_the_total_line_ends_the_summary(report: RunReport) -> None:
    last = _render(report, 200).rstrip().splitlines()[-1]
    assert last == f"{summary_line(report)}; scenario time 37.0s"


def _matrix_rows(text: str) -> dict[str, list[str]]:
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│")]
    return {cells[1].strip(): [cell.strip() for cell in cells[2:-3]] for cells in rows}


SYMBOLS = {Status.PASS: "✓", Status.FAIL: "✗", Status.NOT_APPLICABLE: "–"}


@pytest.mark.parametrize("width", (80, 100))
def test_wide_prints_the_whole_matrix_whatever_the_width(report: RunReport, width: int) -> None:
    text = _render(report, width, wide=True)
    columns = check_columns(report)
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    assert [cell.strip() for cell in header.split("┃")[2:-3]] == list(abbreviations(columns).values())
    expected = {r.scenario: [SYMBOLS[c.status] if (c := r.check(n)) is not None else "" for n in columns]
                for r in report.results}
    assert _matrix_rows(text) == expected  # every cell shown: none squeezed away
    assert f"FAIL {FAILING}::{columns[0]}" in text.splitlines()  # then the same failures and errors


def test_the_commands_that_print_the_summary_take_wide() -> None:
    parser = build_parser()
    for argv in (["run"], ["record"], ["report"], ["audit", "sqlite:///x.db"]):
        assert parser.parse_args([*argv, "--wide"]).wide is True
        assert parser.parse_args(argv).wide is False


def test_report_prints_the_summary_and_with_wide_the_matrix(report: RunReport, tmp_path: Path, capsys,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    source = write_reports(report, tmp_path, formats=("json",))["json"]
    loaded = load_report_json(source)
    out_dir = tmp_path / "out"
    for wide in (False, True):
        assert main(["report", "--from", str(source), "--reports-dir", str(out_dir), *(["--wide"] * wide)]) == 1
        out = capsys.readouterr().out
        expected = _render(loaded, 100, wide=wide, details_in=str(out_dir / "conformance.html"))
        assert out.startswith(expected)
        assert (_matrix_rows(out) != {}) == wide
