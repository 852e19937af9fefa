"""The CLI keeps light traces in memory and the full ones on disk (harness/run/trace_spool.py): every report it
writes from such a run is the one it would write with every full trace in memory."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest

from harness.report.html import render_html
from harness.report.json_report import render_json
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.write import DEFAULT_FORMATS, render_pieces
from harness.result import RunReport
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from harness.run.trace_spool import TraceSpool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report() -> RunReport:
    scenarios = {s.name: s for s in load_scenarios([str(ROOT / "scenarios")])}
    options = RunOptions(cassette_dir=ROOT / "cassettes")
    results = tuple(run_scenario(scenarios[name], options) for name in ("single_delegation", "app_state_two_users"))
    return RunReport(results=results, started_at="2026-01-01T00:00:00+00:00", machine="m", tool_version="0")


def test_a_spooled_report_renders_every_format_as_the_full_one(report: RunReport) -> None:
    spool = TraceSpool()
    light = tuple(spool.keep(i, r) for i, r in enumerate(report.results))
    spooled = dataclasses.replace(report, results=light, full_traces=spool.load)
    assert all(r.trace is not None and not r.trace.events and not r.trace.llm_requests for r in light)
    assert all(r.trace.events for r in report.results)  # the full ones had them: the comparison means something
    assert render_json(spooled) == render_json(report)
    assert render_html(spooled) == render_html(report)
    assert render_markdown(spooled) == render_markdown(report)
    assert render_junit(spooled) == render_junit(report)
    folder = spool.folder
    assert sorted(p.name for p in folder.iterdir()) == ["0.pickle", "1.pickle"]
    spool.close()
    assert not folder.exists()


def test_the_reports_join_the_parts_rendered_as_each_result_arrived(report: RunReport) -> None:
    """The CLI renders each result's parts of the reports (its JSON entry, HTML section, JUnit test cases) as it
    arrives, while the workers run on: the reports then read those parts, not the full traces, and come out as the
    report rendered whole."""
    titles = {"stage_gating": "A <title> to escape"}
    spool = TraceSpool(functools.partial(render_pieces, formats=DEFAULT_FORMATS, titles=titles))
    light = tuple(spool.keep(i, r) for i, r in enumerate(report.results))

    def no_trace(index: int) -> None:
        raise AssertionError(f"the full trace of result {index} was read: its parts were rendered already")

    joined = dataclasses.replace(report, results=light, full_traces=no_trace, pieces=spool.piece)
    assert sorted(p.name for p in spool.folder.iterdir()) == [
        f"{i}.{kind}" for i in (0, 1) for kind in ("html.piece", "json.piece", "junit.piece", "pickle")]
    assert render_json(joined) == render_json(report)
    assert render_html(joined, titles=titles) == render_html(report, titles=titles)
    assert render_junit(joined) == render_junit(report)
    assert render_markdown(joined, titles=titles) == render_markdown(report, titles=titles)
    spool.close()


def test_a_part_that_fails_to_render_early_is_rendered_with_the_report(report: RunReport) -> None:
    """A renderer that raises on a result while the run goes on stops nothing: the part is not kept, and writing
    the report renders it again, where its error is reported as before."""
    def broken(index: int, result: object) -> dict[str, str]:
        raise RuntimeError("a renderer's bug")

    spool = TraceSpool(broken)
    light = tuple(spool.keep(i, r) for i, r in enumerate(report.results))
    spooled = dataclasses.replace(report, results=light, full_traces=spool.load, pieces=spool.piece)
    assert sorted(p.name for p in spool.folder.iterdir()) == ["0.pickle", "1.pickle"]
    assert render_json(spooled) == render_json(report)
    spool.close()


def test_without_a_spool_the_report_reads_the_results_own_traces(report: RunReport) -> None:
    assert report.trace_at(0) is report.results[0].trace


def _write_peak(report: RunReport, folder: Path) -> tuple[int, int]:
    """(peak bytes Python allocated while writing every report of ``report`` spooled 80 times, bytes written).

    Run in a fresh process (``_spooled_write_peak``): tracemalloc counts every thread's allocations, and threads
    that earlier tests of the same worker left behind (a lazy import, a closing client) once added 8 MB to a
    window that allocates about 1."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_spooled_write_peak, report, folder).result()


def _spooled_write_peak(report: RunReport, folder: Path) -> tuple[int, int]:
    import tracemalloc

    from harness.report.write import write_reports

    write_reports(report, folder / "warm-up")  # compiles the HTML template (~4 MB, once per process)
    spool = TraceSpool()
    copies = 80
    light = tuple(spool.keep(i, report.results[i % 2]) for i in range(copies))
    spooled = dataclasses.replace(report, results=light, full_traces=spool.load)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        written = write_reports(spooled, folder / "reports")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        spool.close()
    return peak, sum(path.stat().st_size for path in written.values())


@pytest.mark.slow
def test_writing_the_reports_of_a_large_spooled_run_holds_no_report_whole(report: RunReport, tmp_path: Path) -> None:
    """The JSON and HTML carry every trace (tens of MB for hundreds of scenarios): they are streamed to their
    files, so writing them needs about one scenario's trace in memory, not the reports' text."""
    peak, size = _write_peak(report, tmp_path)
    assert size > 4_000_000  # the comparison means something: the reports are large
    assert peak < size / 4, f"writing {size:,} bytes of reports peaked at {peak:,} bytes allocated"
