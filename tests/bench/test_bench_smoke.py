"""Smoke checks of the benchmark code (bench/): it measures what it says it measures.

No timing is asserted here — only that the bench runs, verifies its own work
(every get_session returns every event; the bare-ADK baseline replays the same
events as the harness) and writes well-formed results. ``python -m bench`` is
where the figures come from.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import pytest

from bench import __main__ as bench_main
from bench import crash, explore, plots, store, suite
from bench.common import Row, geomean, loglog_slope, percentile

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow


def test_statistics_helpers():
    assert percentile([3.0], 99) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert percentile(list(map(float, range(101))), 99) == pytest.approx(99.0)
    assert loglog_slope(10, 1.0, 100, 10.0) == pytest.approx(1.0)
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert Row("x", "y", 3.0, "s", 2.0).ratio == pytest.approx(1.5)
    assert Row("x", "y", 3.0, "s").ratio is None


def test_main_quick_store_writes_table_json_markdown_and_plots(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(store, "QUICK_SIZES", (3, 6))
    monkeypatch.setattr(store, "get_samples", lambda size: 2)
    assert bench_main.main(["--quick", "--only", "store", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "latest.json").read_text())
    # Every service measured at every size; get_session was checked to return every event (measure_size raises).
    by_service = report["details"]["store"]["by_service"]
    assert len(by_service) == len(store.SERVICES)
    for label, by_size in by_service.items():
        assert sorted(by_size, key=int) == ["3", "6"], label
        assert by_size["3"]["appends"] == 3 and by_size["6"]["appends"] == 3, label  # one session grows 0 -> 3 -> 6
        for m in by_size.values():
            assert 0 < m["append_p50_ms"] <= m["append_p99_ms"], label
    ours = by_service[store.LABELS["delta"]]["6"]
    assert 0 < ours["append_sql_ms_mean"] <= ours["append_mean_ms"] and ours["append_statements"] >= 3
    assert report["benchmarks"] == ["store"] and report["quick"] is True
    assert {"cpu_model", "cores", "ram_gib", "python", "packages"} <= set(report["machine"])
    assert report["machine"]["packages"]["google-adk"]
    rows = report["rows"]
    compared = [r for r in rows if r["baseline_name"] == "ADK sqlite"]
    assert {r["target"] for r in compared} == {"<= 1.0x", f"<= {store.APPEND_P50_LIMIT}x"}
    assert len(compared) == 2 * 3  # two sizes x (append p50, append p99, get_session)
    for row in compared:
        assert row["baseline_name"] == "ADK sqlite" and isinstance(row["met"], bool)
        assert math.isfinite(row["value"]) and row["ratio"] == pytest.approx(row["value"] / row["baseline"])
    markdown = (tmp_path / "latest.md").read_text()
    assert "| bench | figure | value |" in markdown and report["machine"]["cpu_model"] in markdown
    for name in ("store_get_session.svg", "store_append_p50.svg"):
        assert ET.parse(tmp_path / name).getroot().tag.endswith("svg")
    assert "rlm-conformance benchmarks" in capsys.readouterr().out


def test_unknown_benchmark_is_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        bench_main.main(["--only", "nope"])
    assert exc.value.code == 2


def _scenario(name):
    found = suite.discover((name,))
    if not found:
        pytest.skip(f"scenario {name} has no cassette here")
    return found[0]


@pytest.mark.parametrize("name", ["single_delegation", "model_safety_block", "model_slow_timeout"])
def test_bare_adk_baseline_drives_the_same_events_as_the_harness(name):
    scenario = _scenario(name)
    harness = suite.run_harness(scenario)
    bare = suite.run_baseline(scenario)
    same_store = suite.run_baseline(scenario, same_store=True)  # the target's own DuckDB session service
    assert harness.ok, harness.error
    assert harness.events == bare.events == same_store.events > 0
    assert harness.terminations == bare.terminations == same_store.terminations


@pytest.mark.parametrize("name, warm", [("executor_environment_one_shot", False), ("executor_environment", True)])
def test_bare_baseline_runs_job_b_on_the_executor_the_harness_gives_the_scenario(name, warm, monkeypatch):
    """A scenario pinned to one-shot Job_B processes (``executor: one-shot``) is one-shot in the baseline too: a
    warm baseline made the harness look 1.8x slower on it."""
    from harness.targets import registry

    given = []
    resolve = registry.resolve_target

    def spy(spec):
        factory = resolve(spec)
        return lambda env: given.append(env.warm_executor) or factory(env)

    monkeypatch.setattr(registry, "resolve_target", spy)
    suite.run_baseline(_scenario(name), same_store=True)
    assert given == [warm]


def test_bare_baseline_plays_http_faults_like_the_client():
    scenario = _scenario("model_500_retries_exhausted")
    assert suite.run_baseline(scenario).terminations == ["model_error"]


def test_scenarios_are_shared_out_longest_first_to_the_least_loaded_process():
    seconds = {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0, "e": 0.5}
    groups = suite.split_longest_first(seconds, 2)
    assert groups == [["a", "d", "e"], ["b", "c"]]  # 4.5 s and 4.0 s
    assert sorted(n for g in groups for n in g) == sorted(seconds)
    assert suite.split_longest_first({"a": 1.0}, 2) == [["a"]]  # no empty process


def test_the_bare_child_runs_its_scenarios_through_a_bare_runner(monkeypatch, capsys):
    """``--bare``: the cold child runs ``run_baseline`` on the same store, not the harness (its JSON says which
    scenarios ran and how long each took)."""
    ran = []
    baseline = suite.run_baseline
    monkeypatch.setattr(suite, "run_baseline", lambda s, same_store=False: ran.append((s.name, same_store))
                        or baseline(s, same_store=same_store))
    suite._child(["--child", "--bare", "--scenario", "single_delegation"])
    out = json.loads(capsys.readouterr().out)
    assert ran == [("single_delegation", True)]
    assert [(s["scenario"], s["ok"]) for s in out["scenarios"]] == [("single_delegation", True)]
    assert out["run_s"] >= out["scenarios"][0]["seconds"] > 0


def test_the_phases_only_child_runs_no_scenario(monkeypatch, capsys):
    """``--phases-only`` (the full bench's cold child): it starts, imports and loads the scenarios, and runs none."""
    monkeypatch.setattr(suite, "run_baseline", lambda *a, **k: pytest.fail("a scenario ran"))
    monkeypatch.setattr("harness.run.runner.run_scenario", lambda *a, **k: pytest.fail("a scenario ran"))
    suite._child(["--child", "--phases-only", "--scenario", "single_delegation"])
    out = json.loads(capsys.readouterr().out)
    assert out["scenarios"] == [] and out["load_scenarios_s"] > 0 and out["import_adk_s"] > 0


def test_plots_are_well_formed_svg():
    svg = plots.loglog_chart("t", "x", "y", {"a": [(10, 1.0), (100, 5.0)], "b": [(10, 2.0), (100, 3.0)]})
    assert ET.fromstring(svg).tag.endswith("svg")
    svg = plots.bar_chart("t", "s", ["one", "two"], {"a": [1.0, 2.0], "b": [0.5, 0.1]})
    assert ET.fromstring(svg).tag.endswith("svg")


def test_quick_explore_rows_compare_with_plain_runs_and_minus_j_2(tmp_path, monkeypatch):
    """The explore rows: examples/s against the same scenarios run plainly, time to first finding, and -j 2 with
    the same findings as -j 1 (legacy fails on its first example, so two examples are enough)."""
    monkeypatch.setattr(explore, "QUICK_EXAMPLES", 2)
    monkeypatch.setattr(explore, "SHRINK_RUNS", 4)
    assert bench_main.main(["--quick", "--only", "explore", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "latest.json").read_text())["rows"]
    names = [r["name"] for r in rows]
    assert any("examples/s (-j 1" in n for n in names) and any("time to first finding" in n for n in names)
    rate = next(r for r in rows if "examples/s (-j 1" in r["name"])
    assert rate["baseline_name"] == "the same scenarios through run_scenario" and rate["baseline"] > 0
    parallel = next(r for r in rows if "with -j 2" in r["name"])
    assert parallel["met"] is True, parallel  # the same findings as -j 1


def test_quick_crash_row_sets_the_matrix_against_normal_runs_times_points(tmp_path, monkeypatch):
    """The crash row: `crash --max-points 1 -j 2` in a fresh process against the normal runs either side of it x 1
    point; the reference agent passes its point (a failing point would say so in the row)."""
    monkeypatch.setattr(crash, "QUICK_POINTS", 1)
    monkeypatch.setattr(crash, "JOBS", (2,))  # -j 1 is the same code path: spare the smoke run three processes
    assert bench_main.main(["--quick", "--only", "crash", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "latest.json").read_text())
    [row] = report["rows"]
    assert row["name"] == "crash matrix single_delegation, 1 after-points, -j 2, wall", row
    normals = report["details"]["crash"]["normal_runs_s"]
    assert len(normals) == 2 and row["baseline"] == pytest.approx(sum(normals) / 2)
    assert row["ratio"] == pytest.approx(row["value"] / row["baseline"]) and row["target"] == "<= 1.0x"
    matrix = report["details"]["crash"]["matrices"]["j2"]
    assert matrix["points"] == 1 and matrix["failing"] == [] and matrix["exit"] == 0
    assert isinstance(row["met"], bool) and "every point passed" in row["note"]
