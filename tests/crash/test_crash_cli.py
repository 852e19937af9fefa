"""``rlm-conformance crash``: exit codes, the table, reports/crash.json (a declared crash case: one point)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

SCENARIOS = str(Path(__file__).parents[2] / "scenarios")


def test_an_unknown_scenario_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "no_such_scenario", "--scenarios-dir", SCENARIOS, "--reports-dir", str(tmp_path)]) \
        == EXIT_USAGE
    assert "no_such_scenario" in capsys.readouterr().err
    assert not (tmp_path / "crash.json").exists()


@pytest.mark.slow
def test_a_declared_crash_case_runs_its_point_and_reports_it(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "crash_before_execution_stored", "--scenarios-dir", SCENARIOS,
                 "--reports-dir", str(tmp_path)]) == EXIT_OK
    assert "before #3 (job_builder)" in capsys.readouterr().out
    [scenario] = json.loads((tmp_path / "crash.json").read_text())["scenarios"]
    [point] = scenario["points"]
    assert (point["kind"], point["author"], point["recovery"], point["failed"]) == ("before", "job_builder",
                                                                                    "retry", False)


@pytest.mark.slow
def test_a_broken_recovery_exits_1_naming_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "crash_after_execution", "--scenarios-dir", SCENARIOS, "--reports-dir", str(tmp_path),
                 "--target", "tests.crash_broken_targets:drops_orphans"]) == EXIT_FAILED
    assert "result_not_lost" in capsys.readouterr().out


def test_by_default_the_tagged_scenarios_run_else_all() -> None:
    from harness.cli.crash import default_selection
    from harness.scenario.loader import load_scenarios

    tagged = [s.name for s in default_selection(load_scenarios([SCENARIOS]))]
    assert "single_delegation" in tagged and "crash_after_execution" in tagged and "exit_loop" not in tagged
    untagged = [s for s in load_scenarios([SCENARIOS]) if "crash" not in s.tags and not s.crash][:3]
    assert default_selection(untagged) == untagged


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_max_points_must_be_a_positive_whole_number(bad: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "single_delegation", "--scenarios-dir", SCENARIOS, "--reports-dir", str(tmp_path),
                 "--max-points", bad]) == EXIT_USAGE
    assert "--max-points" in capsys.readouterr().err
    assert not (tmp_path / "crash.json").exists()


@pytest.mark.slow
def test_max_points_runs_only_the_first_points_in_run_order(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "single_delegation", "--scenarios-dir", SCENARIOS, "--reports-dir", str(tmp_path),
                 "--max-points", "1"]) == EXIT_OK
    [scenario] = json.loads((tmp_path / "crash.json").read_text())["scenarios"]
    [point] = scenario["points"]  # single_delegation passes 9 after-points; only its first runs
    assert (point["kind"], point["index"], point["failed"]) == ("after", 0, False)
    assert "1 point(s)" in capsys.readouterr().out
