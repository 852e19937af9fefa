"""The rlm-conformance pytest plugin, driven the way users drive it: ``pytest`` in a project folder.

Each test builds a small project (its own ``scenarios/``, ``cassettes/``,
``snapshots/``) and runs pytest on it: in this process (``tests/harness/inner_pytest.py``: the plugin is
loaded from its entry point, with a config, syrupy session and plugin session of its own), or in a
subprocess where xdist starts workers anyway. Real runs use the scripted endpoint on 127.0.0.1 or replay:
no network.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.inner_pytest import InnerProject

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SINGLE = (REPO / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")
INI = """\
[pytest]
testpaths = test_conformance.py
asyncio_default_fixture_loop_scope = function
filterwarnings = ignore::DeprecationWarning
"""
TEST_MODULE = """\
from harness.pytest_plugin import assert_conforms


def test_scenario(rlm_scenario_result, snapshot):
    assert_conforms(rlm_scenario_result, snapshot)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    """A project with one scenario (single_delegation), a conformance test module, no cassette or snapshot."""
    project = InnerProject.create(tmp_path, monkeypatch)
    project.write("pytest.ini", INI)
    project.write("scenarios/single_delegation.yaml", SINGLE)
    project.write("test_conformance.py", TEST_MODULE)
    return project


def add_scenario(project: InnerProject, name: str) -> None:
    project.write(f"scenarios/{name}.yaml", SINGLE.replace("name: single_delegation", f"name: {name}"))


def run(project: InnerProject, *args: str) -> pytest.RunResult:
    return project.run(*args)


def run_with_workers(project: InnerProject, *args: str) -> pytest.RunResult:
    """``pytest -n 2 ARGS`` in a subprocess, as a user starts it (xdist's workers are fresh processes anyway)."""
    return project.run_in_subprocess("-n", "2", *args)


# --- collection --------------------------------------------------------------------------------------

def test_ids_are_readable_from_yaml_files_and_from_the_test_module(project: InnerProject) -> None:
    add_scenario(project, "second_scenario")
    result = run(project, "--collect-only", "-q", "scenarios", "test_conformance.py")
    result.stdout.fnmatch_lines([
        "scenarios/second_scenario.yaml::scenario[[]second_scenario[]]",
        "scenarios/single_delegation.yaml::scenario[[]single_delegation[]]",
        "test_conformance.py::test_scenario[[]second_scenario[]]",
        "test_conformance.py::test_scenario[[]single_delegation[]]",
        "4 tests collected*",
    ])


def test_k_selects_one_scenario(project: InnerProject) -> None:
    add_scenario(project, "second_scenario")
    result = run(project, "--collect-only", "-q", "-k", "single_delegation", "scenarios", "test_conformance.py")
    result.stdout.fnmatch_lines(["*2/4 tests collected (2 deselected)*"])
    assert "second_scenario]" not in result.stdout.str()


def test_a_broken_scenario_file_is_a_collection_error_naming_file_and_line(project: InnerProject) -> None:
    (project.path / "scenarios" / "broken.yaml").write_text("name: broken\ndescription: [unclosed\n", encoding="utf-8")
    result = run(project, "--collect-only", "-q", "scenarios/broken.yaml")
    result.stdout.fnmatch_lines(["*scenarios/broken.yaml:*invalid YAML*"])
    assert result.ret != 0


def test_an_option_name_taken_by_another_plugin_leaves_the_rlm_twin(project: InnerProject) -> None:
    project.write("clashing.py", 'def pytest_addoption(parser):\n'
                                 '    parser.getgroup("other").addoption("--target", dest="other_target")\n')
    result = run(project, "-p", "clashing", "--rlm-target", "legacy", "--collect-only", "-q", "test_conformance.py")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["test_conformance.py::test_scenario[[]single_delegation[]]"])


def test_recording_from_an_explicit_replay_is_a_usage_error(project: InnerProject) -> None:
    result = run(project, "--record-mode", "once", "--llm-mode", "replay", "test_conformance.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--record-mode once records cassettes, but --llm-mode replay*scripted*"])


def test_record_mode_alone_records_from_the_scripted_model(project: InnerProject) -> None:
    result = run(project, "--record-mode", "once", "--collect-only", "-q", "test_conformance.py")
    assert result.ret == 0, result.stderr.str()
    result = run(project, "--record-mode", "once", "--collect-only", "test_conformance.py")
    result.stdout.fnmatch_lines(["rlm-conformance: llm-mode scripted, *"])
    # A configured live mode is kept: the implied mode only replaces replay.
    live = run(project, "--record-mode", "once", "--llm-mode", "live", "--collect-only", "test_conformance.py")
    live.stdout.fnmatch_lines(["rlm-conformance: llm-mode live, *"])


# --- verdicts ------------------------------------------------------------------------------------------

def test_a_failing_check_fails_the_item_with_its_evidence(project: InnerProject) -> None:
    result = run(project, "scenarios", "--target", "legacy", "--llm-mode", "scripted")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*single_delegation on target legacy (llm-mode scripted, session-service DatabaseSessionService): * checks failed",
        "  FAIL no_pruning_plugin: *",
        "      - plugin #1 'RlmContextPruningPlugin' is in App.plugins",
        "  FAIL summary_persisted: *",
    ])
    # The snapshot of a non-reference target has its own folder, and the hint repeats this run's options.
    result.stdout.fnmatch_lines([
        "snapshot snapshots/legacy/single_delegation.json: Snapshot 'single_delegation' does not exist!",
        ("*--snapshot-update: pytest 'scenarios/single_delegation.yaml::scenario[[]single_delegation[]]' "
         "--target legacy --llm-mode scripted --snapshot-update"),
    ])


def test_a_missing_cassette_in_replay_fails_with_the_record_command(project: InnerProject) -> None:
    result = run(project, "test_conformance.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "  FAIL cassette: *cassette*does not exist*rlm-conformance record --scenario single_delegation",
        "*judged a re-run against the scenario's scripted model*",
        ("  Re-record from pytest: pytest 'test_conformance.py::test_scenario[[]single_delegation[]]' "
         "--llm-mode scripted --record-mode rewrite"),
    ])
    assert "Traceback" not in result.stdout.str()


def test_a_missing_snapshot_fails_and_says_how_to_create_it(project: InnerProject) -> None:
    result = run(project, "test_conformance.py", "--llm-mode", "scripted")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "snapshot snapshots/single_delegation.json: Snapshot 'single_delegation' does not exist!",
        "  Create it by re-running with --snapshot-update: *",
        "*1 snapshot failed.*",
    ])
    assert not (project.path / "snapshots").exists()


def test_snapshot_update_writes_the_snapshot_and_the_next_run_passes(project: InnerProject) -> None:
    first = run(project, "test_conformance.py", "--llm-mode", "scripted", "--snapshot-update")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*1 snapshot generated.*"])
    stored = project.path / "snapshots" / "single_delegation.json"
    snapshot = json.loads(stored.read_text(encoding="utf-8"))
    assert snapshot["scenario"] == "single_delegation"
    assert snapshot["final_state"]["single_delegation-0"]["session"]["rlm:last_artifact_id"] == "<artifact:1>"

    second = run(project, "test_conformance.py", "--llm-mode", "scripted")
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(["*1 snapshot passed.*"])

    # A changed snapshot fails with syrupy's diff and the command that accepts the change.
    stored.write_text(stored.read_text(encoding="utf-8").replace("exit_loop", "exit_lop"), encoding="utf-8")
    third = run(project, "test_conformance.py", "--llm-mode", "scripted")
    third.assert_outcomes(failed=1)
    third.stdout.fnmatch_lines(["snapshot snapshots/single_delegation.json differs from this run*",
                                "*exit_lop*", "*review it and re-run with --snapshot-update*"])


def test_record_once_then_replay_offline(project: InnerProject) -> None:
    recorded = run(project, "test_conformance.py", "--llm-mode", "scripted", "--record-mode", "once",
                   "--snapshot-update")
    recorded.assert_outcomes(passed=1)
    assert (project.path / "cassettes" / "single_delegation.yaml").is_file()
    replayed = run(project, "test_conformance.py")
    replayed.assert_outcomes(passed=1)


def test_snapshot_update_leaves_other_targets_and_foreign_files_alone(project: InnerProject) -> None:
    snapshots = project.mkdir("snapshots")
    (snapshots / "legacy").mkdir()
    (snapshots / "legacy" / "single_delegation.json").write_text("{}\n", encoding="utf-8")
    (snapshots / "README.md").write_text("reviewed snapshots\n", encoding="utf-8")
    (snapshots / "removed_scenario.json").write_text("{}\n", encoding="utf-8")

    result = run(project, "--llm-mode", "scripted", "--snapshot-update")  # a full run: no path arguments
    result.assert_outcomes(passed=1)
    assert (snapshots / "single_delegation.json").is_file()
    assert (snapshots / "legacy" / "single_delegation.json").is_file()
    assert (snapshots / "README.md").is_file()
    assert not (snapshots / "removed_scenario.json").exists()  # a scenario that is gone: syrupy deletes it


def test_xdist_gives_the_serial_verdicts_and_snapshots(project: InnerProject) -> None:
    """``pytest -n 2`` over the scenarios: the same verdicts as a serial run, and the snapshots it writes (each
    scenario runs in its own work dir, store and executor, ids seeded by its name: harness/run/determinism.py)."""
    pytest.importorskip("xdist")
    for name in ("second_scenario", "third_scenario"):
        add_scenario(project, name)
    folder = project.path / "snapshots"
    run(project, "test_conformance.py", "--llm-mode", "scripted", "--snapshot-update").assert_outcomes(passed=3)
    assert sorted(p.name for p in folder.iterdir()) == ["second_scenario.json", "single_delegation.json",
                                                         "third_scenario.json"]
    # In the workers, each trace serialises to exactly what the serial run wrote (syrupy compares the text), so
    # the two unchanged snapshots pass, and the changed one fails there too.
    third = folder / "third_scenario.json"
    third.write_bytes(third.read_bytes().replace(b'"turns"', b'"turnz"'))
    result = run_with_workers(project, "test_conformance.py", "--llm-mode", "scripted")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_scenario[[]third_scenario[]]*", "*snapshot*third_scenario.json differs*"])


def test_a_baseline_accepts_known_failures_and_only_those(project: InnerProject) -> None:
    """--baseline FILE, as `run --baseline`: a scenario whose only failures the file accepts is xfail, naming the
    entry; a finding it does not accept fails the item, and an entry whose finding is gone is a warning."""
    from harness.cli import main

    target = ("--target", "tests.broken_targets:direct_mutation", "--llm-mode", "scripted")
    baseline = project.path / "baseline.yaml"
    assert main(["run", *target, "--scenarios-dir", "scenarios", "--reports-dir", "reports", "--no-progress",
                 "--write-baseline", str(baseline)]) == 1  # the snapshot is missing: a harness row, never accepted
    assert "check: no_unpersisted_mutation" in baseline.read_text(encoding="utf-8")
    run(project, "scenarios", *target, "--snapshot-update")
    result = run(project, "scenarios", *target, "--baseline", str(baseline))
    result.assert_outcomes(xfailed=1)
    baseline.write_text(baseline.read_text(encoding="utf-8").replace("no_unpersisted_mutation", "none_deletes"),
                        encoding="utf-8")
    result = run(project, "scenarios", *target, "--baseline", str(baseline), "-W", "always::UserWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  FAIL no_unpersisted_mutation: *"])
    result.stdout.fnmatch_lines(["*no longer occurs: none_deletes in single_delegation*"])
