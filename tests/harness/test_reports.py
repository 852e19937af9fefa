"""Reporters: JUnit, Markdown, HTML (self-contained, escaped, with the timeline), terminal, JSON, atomic writes."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from harness.checks import ALL_CHECK_NAMES, run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import TraceBuilder, happy_trace, make_context
from harness.report import (ReportError, load_report_json, render_html, render_json, render_junit, render_markdown,
                            render_terminal, write_reports)
from harness.report import write as write_module
from harness.report.summary import abbreviations, summary_line
from harness.report.timeline import build_timeline
from harness.result import RunReport, ScenarioResult

PLANTED = "<script>alert('pwned')</script>"
CASSETTE_ERROR = ("Scenario 'broken': cassette cassettes/broken.yaml does not exist, and replay never records. "
                  "Record it with: rlm-conformance record --scenario broken")


def _result(name: str, checks: list[CheckResult], trace=None, error: str | None = None) -> ScenarioResult:
    return ScenarioResult(scenario=name, description=f"The {name} scenario.", target="reference", llm_mode="replay",
                          session_service="delta", checks=tuple(checks), trace=trace, duration_s=1.25, error=error)


def make_report() -> RunReport:
    good_trace = happy_trace()
    good = _result("good", run_checks(make_context(good_trace)), good_trace)
    bad_trace = happy_trace(summary=f"The total is {PLANTED}")
    bad_checks = list(run_checks(make_context(bad_trace)))
    bad_checks[0] = CheckResult("no_pruning_plugin", Status.FAIL, f"1 pruning plugin wired {PLANTED}",
                                (f"plugin #1 {PLANTED} is in App.plugins", "ansi \x1b[31mred\x1b[0m and ]]> end",
                                 "a `backtick` and | pipe"))
    bad = _result("bad", bad_checks, bad_trace)
    broken = _result("broken", [], None, error=CASSETTE_ERROR)
    return RunReport(results=(good, bad, broken), started_at="2026-01-02T03:04:05+00:00", machine="ci-box",
                     tool_version="0.1.0", extra={"llm_mode": "replay"})


@pytest.fixture(scope="module")
def report() -> RunReport:
    return make_report()


# --- shared ------------------------------------------------------------------------------------------------------


def test_summary_line_counts_everything(report: RunReport) -> None:
    # good: all pass or n/a; bad: the same but 1 fail (its summary check is unaffected); broken: error.
    statuses = [c.status for r in report.results for c in r.checks]
    line = summary_line(report)
    assert line == (f"3 scenarios, {len(ALL_CHECK_NAMES)} checks: {statuses.count(Status.PASS)} passed, 1 failed, "
                    f"{statuses.count(Status.NOT_APPLICABLE)} n/a, 1 errored")


def test_abbreviations_go_past_z() -> None:
    names = [f"c{i}" for i in range(28)]
    short = abbreviations(names)
    assert [short["c0"], short["c25"], short["c26"], short["c27"]] == ["a", "z", "aa", "ab"]


# --- JUnit -------------------------------------------------------------------------------------------------------


def test_junit_is_valid_xml_with_matching_counts(report: RunReport) -> None:
    root = ET.fromstring(render_junit(report).encode("utf-8"))
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    cases = suite.findall("testcase")
    n_checks = sum(len(r.checks) for r in report.results)
    assert len(cases) == n_checks + 1 == int(suite.get("tests"))
    assert int(suite.get("failures")) == len(suite.findall("testcase/failure")) == 1
    assert int(suite.get("errors")) == len(suite.findall("testcase/error")) == 1
    n_na = sum(c.status is Status.NOT_APPLICABLE for r in report.results for c in r.checks)
    assert int(suite.get("skipped")) == len(suite.findall("testcase/skipped")) == n_na
    names = {c.get("name") for c in cases}
    assert "good::summary_persisted" in names and "broken::run" in names

    failure = suite.find("testcase[@name='bad::no_pruning_plugin']/failure")
    assert failure.get("message") == f"1 pruning plugin wired {PLANTED}"
    assert f"plugin #1 {PLANTED} is in App.plugins" in failure.text
    assert "\\x1b[31mred" in failure.text  # a control character XML cannot hold, escaped
    error = suite.find("testcase[@name='broken::run']/error")
    assert "cassettes/broken.yaml" in error.get("message") and "rlm-conformance record" in error.text


# --- Markdown ----------------------------------------------------------------------------------------------------


def test_markdown_has_the_table_and_the_failure_evidence(report: RunReport) -> None:
    md = render_markdown(report, titles={"no_pruning_plugin": "No pruning plugin wired"})
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| scenario | result |"))
    assert header.count("|") == 2 + len(ALL_CHECK_NAMES) + 1
    good_row = next(line for line in lines if line.startswith("| good |"))
    bad_row = next(line for line in lines if line.startswith("| bad |"))
    assert "❌" not in good_row and "✅" in good_row and "–" in good_row
    assert "❌ fail" in bad_row
    assert any(line.startswith("| broken | ⚠️ error |") for line in lines)
    assert "### bad::no\\_pruning\\_plugin" in md
    assert f"plugin #1 {PLANTED} is in App.plugins" in md  # inside a fenced block: literal
    assert "&lt;script&gt;" in md  # in the escaped explanation text
    assert "cassettes/broken.yaml" in md
    assert "No pruning plugin wired" in md


# --- HTML --------------------------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


def test_html_is_self_contained(report: RunReport) -> None:
    html = render_html(report)
    tags = _parse(html).tags
    links = [attrs.get(a) or "" for _, attrs in tags for a in ("src", "href")]
    assert not [link for link in links if re.match(r"\s*(https?:)?//", link)]
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*https?://""", html, re.IGNORECASE)
    assert "<style>" in html
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe")]


def test_html_escapes_planted_markup(report: RunReport) -> None:
    html = render_html(report)
    assert PLANTED not in html
    assert "&lt;script&gt;alert(" in html
    assert "<script" not in html.lower()


def test_html_contains_the_timeline(report: RunReport) -> None:
    html = render_html(report)
    tags = _parse(html).tags
    event_rows = [attrs for tag, attrs in tags if tag == "tr" and attrs.get("class") == "event"]
    good, bad, _ = report.results
    assert len(event_rows) == len(good.trace.events) + len(bad.trace.events)
    assert sum(1 for tag, attrs in tags if tag == "tr" and attrs.get("class") == "persisted") == 2
    assert "State-delta timeline" in html and "Persisted after turn 0" in html
    # temp: keys are visibly marked; a failing scenario's section starts open, a passing one closed.
    assert re.search(r'class="k added temp"[^>]*>\+ temp:rlm:stage', html)
    sections = {attrs["id"]: attrs for tag, attrs in tags if tag == "details" and "scenario" in attrs.get("class", "")}
    assert "open" not in sections["s0-good"] and "open" in sections["s1-bad"] and "open" in sections["s2-broken"]
    assert "cassettes/broken.yaml" in html


def test_timeline_classifies_keys_and_marks_temp_and_escalate() -> None:
    b = TraceBuilder()
    b.start_turn("first")
    b.event("databricks_analyst", delta={"rlm:a": 1, "temp:rlm:t": "x"})
    b.event("databricks_analyst", delta={"rlm:a": 2, "rlm:b": 1})
    b.event("job_builder", delta={"rlm:a": 2, "rlm:b": None}, escalate=True)
    b.end_turn()
    blocks = build_timeline(b.build())
    assert len(blocks) == 1 and blocks[0].message == "first"
    rows = {row.index: row for row in blocks[0].rows}
    first = {k.key: k for k in rows[1].emitted}
    assert first["rlm:a"].kind == "added" and first["temp:rlm:t"].temp and first["temp:rlm:t"].dropped
    assert [k.key for k in rows[1].appended] == ["rlm:a"]
    assert {k.key: k.kind for k in rows[2].emitted} == {"rlm:a": "changed", "rlm:b": "added"}
    assert {k.key: k.kind for k in rows[3].emitted} == {"rlm:a": "same", "rlm:b": "deleted"}
    assert rows[3].escalate
    persisted = blocks[0].persisted[0]
    stored = {e.key for e in persisted.session_state}
    assert "rlm:a" in stored and "rlm:b" not in stored


# --- terminal ----------------------------------------------------------------------------------------------------


def test_terminal_summary_failures_errors_and_total_line(report: RunReport) -> None:
    # The layout at 80/100/200 columns is tests/harness/test_terminal_summary.py's.
    console = Console(record=True, width=200, color_system=None, file=io.StringIO())
    render_terminal(report, console)
    text = console.export_text()
    assert "FAIL bad::no_pruning_plugin" in text and "ERROR broken" in text
    assert f"could not run: {CASSETTE_ERROR}" in text
    assert "ansi \\x1b[31mred\\x1b[0m and ]]> end" in text and "\x1b" not in text  # an escape is shown, not obeyed
    assert text.rstrip().splitlines()[-1].startswith(f"{summary_line(report)}; scenario time ")


def test_terminal_wide_prints_the_matrix_and_its_legend(report: RunReport) -> None:
    console = Console(record=True, width=200, color_system=None, file=io.StringIO())
    render_terminal(report, console, wide=True)
    text = console.export_text()
    letters = abbreviations(list(ALL_CHECK_NAMES))
    assert f"{letters['no_pruning_plugin']} no_pruning_plugin" in text
    assert f"{letters['scenario_expectations']} scenario_expectations" in text
    assert "bad::no_pruning_plugin" in text and "ERROR broken" in text


# --- JSON and writing --------------------------------------------------------------------------------------------


def test_json_round_trip_renders_identically(report: RunReport, tmp_path: Path) -> None:
    written = write_reports(report, tmp_path, formats=("json",))
    loaded = load_report_json(written["json"])
    assert loaded == report
    assert render_html(loaded) == render_html(report) and render_junit(loaded) == render_junit(report)


@pytest.mark.parametrize("content, fragment", [
    (None, "no such report file"),
    ("{not json", "not valid JSON"),
    ('{"results": []}', "not an rlm-conformance report"),
])
def test_load_report_json_errors_name_the_file(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "conformance.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ReportError, match=fragment) as info:
        load_report_json(path)
    assert str(path) in str(info.value)


def test_write_reports_names_and_formats(report: RunReport, tmp_path: Path) -> None:
    written = write_reports(report, tmp_path / "reports")
    assert {k: p.name for k, p in written.items()} == {"junit": "conformance.xml", "markdown": "conformance.md",
                                                       "html": "conformance.html", "json": "conformance.json"}
    with pytest.raises(ReportError, match="unknown report format.*'pdf'"):
        write_reports(report, tmp_path, formats=("junit", "pdf"))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_renderer_that_raises_leaves_previous_reports_intact(report: RunReport, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    written = write_reports(report, tmp_path)
    before = {name: path.read_bytes() for name, path in written.items()}

    def broken(report: RunReport, titles: object) -> str:
        raise RuntimeError("renderer bug")

    html_format = write_module.FORMATS["html"]
    monkeypatch.setitem(write_module.FORMATS, "html", write_module.ReportFormat("html", html_format.filename, broken))
    changed = RunReport(results=report.results[:1], started_at="later", machine="m", tool_version="0.2.0")
    with pytest.raises(RuntimeError, match="renderer bug"):
        write_reports(changed, tmp_path)
    assert {name: path.read_bytes() for name, path in written.items()} == before
    assert _leftovers(tmp_path) == []


def test_a_failed_write_leaves_no_partial_file(report: RunReport, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    written = write_reports(report, tmp_path, formats=("markdown",))
    before = written["markdown"].read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_module.os, "fsync", disk_full)
    changed = RunReport(results=report.results[:1], started_at="later", machine="m", tool_version="0.2.0")
    with pytest.raises(ReportError, match="No space left on device.*previous file, if any, is unchanged"):
        write_reports(changed, tmp_path, formats=("markdown",))
    assert written["markdown"].read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_render_json_is_what_load_reads(report: RunReport, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(render_json(report), encoding="utf-8")
    assert load_report_json(path).results[2].error == CASSETTE_ERROR


@pytest.mark.parametrize("results", [slice(None), slice(0, 0), slice(2, 3)], ids=["all", "none", "errored only"])
def test_streamed_junit_is_the_whole_tree_indented(report: RunReport, results: slice) -> None:
    """iter_junit writes one result's <testcase>s at a time; stitched, the text is what ET gives for the whole tree."""
    import dataclasses

    from harness.report import junit

    part = dataclasses.replace(report, results=report.results[results])
    root = ET.fromstring(render_junit(dataclasses.replace(part, results=())).encode("utf-8"))
    suite = root.find("testsuite")
    for case in (case for result in part.results for case in junit._testcases(result)):
        suite.append(case)
    for name in ("tests", "failures", "errors", "skipped", "time"):  # the counts of the whole run
        whole = ET.fromstring(render_junit(part).encode("utf-8"))
        root.set(name, whole.get(name))
        suite.set(name, whole.find("testsuite").get(name))
    ET.indent(root)
    assert render_junit(part) == ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
