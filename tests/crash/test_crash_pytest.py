"""``pytest --rlm-crash POINTS``: the crash verb's runs as items ``crash::<scenario>`` of a project's pytest run —
selected as the verb selects, failing with its checks' evidence on a broken target, a skip where it cannot judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.inner_pytest import InnerProject

REPO = Path(__file__).resolve().parents[2]
CASE = (REPO / "scenarios" / "crash_after_execution.yaml").read_text(encoding="utf-8")
UNTAGGED = (REPO / "scenarios" / "exit_loop.yaml").read_text(encoding="utf-8")
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = ignore::DeprecationWarning\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    """A project with a declared crash case (one point) and an untagged scenario; the crash children import the
    broken targets from this repository."""
    project = InnerProject.create(tmp_path, monkeypatch)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    project.write("pytest.ini", INI)
    project.write("scenarios/crash_after_execution.yaml", CASE)
    project.write("scenarios/exit_loop.yaml", UNTAGGED)
    return project


def test_the_items_are_the_scenarios_crash_would_pick(project: InnerProject) -> None:
    result = project.run("--rlm-crash", "after", "--collect-only", "-q", "-m", "rlm_crash")
    result.stdout.fnmatch_lines(["crash::crash_after_execution", "*(2 deselected)*"])
    assert "crash::exit_loop" not in result.stdout.str()
    # Without the option nothing is added.
    plain = project.run("--collect-only", "-q", "scenarios")
    assert "crash::" not in plain.stdout.str()


def test_untagged_scenarios_all_get_an_item(project: InnerProject) -> None:
    (project.path / "scenarios" / "crash_after_execution.yaml").unlink()
    result = project.run("--rlm-crash", "all", "--collect-only", "-q", "-m", "rlm_crash")
    result.stdout.fnmatch_lines(["crash::exit_loop"])


def test_max_points_must_be_positive(project: InnerProject) -> None:
    result = project.run("--rlm-crash", "after", "--rlm-crash-max-points", "0", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'0' is not a positive whole number*"])


@pytest.mark.slow
def test_the_reference_agent_passes_its_declared_crash_case(project: InnerProject) -> None:
    result = project.run("--rlm-crash", "after", "-m", "rlm_crash")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_broken_recovery_fails_the_item_with_the_checks_evidence(project: InnerProject) -> None:
    result = project.run("--rlm-crash", "after", "-m", "rlm_crash", "--target",
                         "tests.crash_broken_targets:drops_orphans")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "crash_after_execution: 1 point(s), * s (uncrashed run * s)",
        "  after #* (job_builder)*next_turn FAIL  result_not_lost*",
        "      result_not_lost: *",
        "  Reproduce: rlm-conformance crash crash_after_execution --points after --scenarios-dir * "
        "--target tests.crash_broken_targets:drops_orphans",
    ])


@pytest.mark.slow
def test_an_in_memory_service_is_a_skip_saying_why(project: InnerProject) -> None:
    result = project.run("--rlm-crash", "after", "-m", "rlm_crash", "--session-service", "adk-memory", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*crash crash_after_execution: the session service InMemorySessionService keeps "
                                 "nothing across processes*"])


@pytest.mark.slow
def test_a_concurrent_case_is_a_crash_item_failing_by_the_witness_and_its_scenario_item_a_skip(
        project: InnerProject) -> None:
    project.write("scenarios/concurrent_double_submit.yaml",
                  (REPO / "scenarios" / "concurrent_double_submit.yaml").read_text(encoding="utf-8"))
    result = project.run("--rlm-crash", "after", "-k", "concurrent_double_submit", "-rs", "--session-service",
                         "tests.contract.concurrent_services:unchecked_delta_file")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "concurrent_double_submit: 2 runners at once (one session), * s",
        "  concurrent_history * FAIL  Runners at once lost, doubled or forked what the store acknowledged: *",
        "      lost_update (user:rlm:history): *",
        "        minimal witness:",
    ])
    result.stdout.fnmatch_lines(["SKIPPED * concurrent_double_submit is a concurrent case: *rlm-conformance crash "
                                 "concurrent_double_submit*"])
