"""The explorer's search on a fake run: rounds, shrinking, discards, determinism — no agent runs here.

``run_scenario`` is replaced by a function of the scenario alone, so these tests show what the engine does with
verdicts (milliseconds an example) and leave what a real target does to test_explore_finds.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.base import CheckResult, Status
from harness.explore.engine import Budget, Explorer
from harness.explore.findings import HARNESS_BUG
from harness.explore.library import load_library
from harness.explore.target_model import AgentModel, ToolModel, model_from
from harness.llm.modes import LlmMode
from harness.result import ScenarioResult
from harness.run.options import RunOptions
from harness.scenario.models import Scenario
from harness.targets.profile import TargetProfile
from harness.trace.model import Trace

DELEGATE = ToolModel("delegate", {"type": "object", "properties": {"code": {"type": "string"},
                                                                  "note": {"type": "string"}},
                                  "required": ["code", "note"]})
EXIT = ToolModel("exit_loop", {})
PROFILE = TargetProfile(analyst="analyst", delegate_tool="delegate", exit_tool="exit_loop")
MODEL = model_from("fake:app", PROFILE, (AgentModel("analyst", (DELEGATE, EXIT)), AgentModel("processor")))
CHECKS = frozenset({"stage_gating", "none_deletes", "minimal_deltas"})


def _codes(scenario: Scenario) -> list[str]:
    return [step.args.get("code", "") for step in scenario.script["analyst"] if getattr(step, "call", None)]


def fake_result(scenario: Scenario, *, problems: tuple[str, ...] = ()) -> ScenarioResult:
    """stage_gating fails when a session has two turns and some delegated code raises; none_deletes fails
    always; harness bug when two users appear and FINAL_VAR is delegated."""
    codes = _codes(scenario)
    users = {s.user for s in scenario.sessions}
    if len(users) > 1 and any("FINAL_VAR(" in c for c in codes) and not problems:
        return ScenarioResult(scenario=scenario.name, description="", target="fake:app", llm_mode="scripted",
                              session_service="x", checks=(), trace=None, duration_s=0.0,
                              error="the harness (a bug: please report) raised KeyError")
    failing = {"none_deletes"}
    if any(len(s.turns) >= 2 for s in scenario.sessions) and any("raise " in c for c in codes):
        failing.add("stage_gating")
    checks = tuple(CheckResult(name, Status.FAIL if name in failing else Status.PASS, f"{name} says no",
                               (f"event #3 (author x) broke {name}",)) for name in sorted(CHECKS))
    trace = Trace(scenario=scenario.name, target="fake:app", llm_mode="scripted", session_service="x",
                  script_problems=list(problems))
    return ScenarioResult(scenario=scenario.name, description="", target="fake:app", llm_mode="scripted",
                          session_service="x", checks=checks, trace=trace, duration_s=0.0)


def fake_run(scenario: Scenario, options: RunOptions) -> ScenarioResult:
    """``fake_result`` as a run, for worker processes (``-j``): they import it by name."""
    return fake_result(scenario)


@pytest.fixture
def fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[Scenario]:
    ran: list[Scenario] = []

    def run(scenario: Scenario, options: RunOptions) -> ScenarioResult:
        ran.append(scenario)
        return fake_result(scenario)

    monkeypatch.setattr("harness.run.runner.run_scenario", run)
    return ran


def explore(*, seed: int = 0, examples: int = 80, database: Path | None = None, checks=CHECKS, jobs: int = 1):
    explorer = Explorer(MODEL, load_library(), RunOptions(llm_mode=LlmMode.SCRIPTED), checks=checks, seed=seed,
                        budget=Budget(max_examples=examples, shrink_runs=200), database=database, jobs=jobs,
                        run=fake_run if jobs > 1 else None)
    return explorer.explore()


@pytest.mark.slow
def test_each_failing_check_is_found_and_shrunk_to_its_minimal_conversation(fake_runs: list[Scenario]) -> None:
    # Seed 10: one whose 80 examples show all three of the fake's failures (any seed's draws move when a generated
    # dimension is added; this test is about what the engine does with the failures it meets).
    report = explore(seed=10)
    found = {f.check: f for f in report.findings}
    assert set(found) == {"none_deletes", "stage_gating", HARNESS_BUG}
    always = found["none_deletes"].plan
    assert (always.turns, len(always.sessions), always.steps) == (1, 1, ())  # the first, simplest example
    assert found["none_deletes"].after_examples == 1
    staged = found["stage_gating"].plan
    assert [s.turns for s in staged.sessions] == [2]
    assert [s.describe() for s in staged.steps] == ["delegate:raise"]
    assert staged.max_iterations == 1
    bug = found[HARNESS_BUG].plan
    assert sorted(s.user for s in bug.sessions) == ["user_1", "user_2"] and len(bug.steps) == 1


@pytest.mark.slow
def test_the_same_seed_gives_the_same_examples_and_findings(fake_runs: list[Scenario]) -> None:
    first = explore(seed=11, examples=60)
    runs = [s.model_dump_json() for s in fake_runs]
    fake_runs.clear()
    second = explore(seed=11, examples=60)
    assert [s.model_dump_json() for s in fake_runs] == runs
    assert [(f.check, f.plan) for f in first.findings] == [(f.check, f.plan) for f in second.findings]


@pytest.mark.slow  # four explorations with two spawned workers each: left out of `tox -e fast`
def test_workers_find_what_one_process_finds(fake_runs: list[Scenario], tmp_path: Path) -> None:
    """``-j 2`` runs examples ahead in two worker processes; the search still asks for the same runs in the same
    order, so the findings, their minimal plans and every count are those of ``-j 1`` (with a database too)."""
    def outcome(report):  # noqa: ANN001, ANN202
        return ([(f.check, f.shape, f.plan, f.after_examples) for f in report.findings], report.tried,
                report.shrink_runs, report.discarded)

    assert outcome(explore(seed=11, examples=60, jobs=2)) == outcome(explore(seed=11, examples=60))
    first = outcome(explore(seed=5, examples=40, database=tmp_path / "one", jobs=1))
    assert outcome(explore(seed=5, examples=40, database=tmp_path / "two", jobs=2)) == first


@pytest.mark.slow
def test_only_the_checks_asked_for_make_findings(fake_runs: list[Scenario]) -> None:
    report = explore(checks=frozenset({"minimal_deltas"}), examples=30)
    assert {f.check for f in report.findings} <= {HARNESS_BUG}
    assert report.tried <= 30 + report.shrink_runs


def test_a_script_the_target_outran_is_discarded_not_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    overrun = ("agent 'analyst' called its model 9 time(s) but script.analyst has 8 step(s): call index 8 got "
               "HTTP 400 from the scripted endpoint, an error the script does not declare.",)
    monkeypatch.setattr("harness.run.runner.run_scenario", lambda scenario, options: fake_result(scenario,
                                                                                            problems=overrun))
    report = explore(examples=5)
    assert report.findings == []
    assert report.discarded == report.tried == 5


@pytest.mark.slow
def test_the_example_database_replays_each_rounds_minimum_first(fake_runs: list[Scenario], tmp_path: Path) -> None:
    first = explore(seed=5, examples=80, database=tmp_path / "db")
    fake_runs.clear()
    again = explore(seed=5, examples=80, database=tmp_path / "db")
    # Each round starts from its stored minimum: the first run's findings come first, as small, and sooner; the
    # examples saved meanwhile may lead the rest of the search elsewhere (to more findings).
    assert [(f.check, f.plan) for f in again.findings][:len(first.findings)] == [(f.check, f.plan)
                                                                                for f in first.findings]
    assert all(a.after_examples <= f.after_examples for a, f in zip(again.findings, first.findings))
    assert any((tmp_path / "db").iterdir())


@pytest.mark.slow
def test_a_time_budget_alone_ends_the_search(fake_runs: list[Scenario]) -> None:
    explorer = Explorer(MODEL, load_library(), RunOptions(llm_mode=LlmMode.SCRIPTED),
                        checks=frozenset({"minimal_deltas"}), seed=1, budget=Budget(max_examples=None, time_s=3.0),
                        database=None)
    report = explorer.explore()
    assert {f.check for f in report.findings} <= {HARNESS_BUG} and 0 < report.tried and report.elapsed_s < 15


def _raising(scenario: Scenario, options: RunOptions) -> ScenarioResult:
    """Every turn raises (a store that refuses the harness's ids, as a sqlite file left by an earlier run did):
    not a missing state key, so nothing to seed; none_deletes still fails, judged on turns that ended early."""
    from harness.trace.model import TurnError, TurnOutcome, TurnRecord

    result = fake_result(scenario)
    crash = TurnError(type="AlreadyExistsError", message="Session e-1 already exists.", origin="session service X")
    turns = [TurnRecord(turn=i, session_id="s", user_id=s.user, message=t.user, outcome=TurnOutcome(crash=crash))
             for s in scenario.sessions for i, t in enumerate(s.turns)]
    return ScenarioResult(scenario=result.scenario, description="", target="fake:app", llm_mode="scripted",
                          session_service="x", checks=result.checks, duration_s=0.0,
                          trace=result.trace.model_copy(update={"turns": turns}))


def test_a_search_where_most_turns_raise_is_an_obstruction_not_a_clean_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from harness.explore.command import render_report
    from harness.explore.findings import TURNS_RAISED

    monkeypatch.setattr("harness.run.runner.run_scenario", _raising)
    report = explore(examples=10, checks=frozenset({"stage_gating"}))  # fails on some examples, not the raise's
    assert report.examples_raised == report.examples_judged == report.tried and report.turns_run > 0
    assert [f.check for f in report.findings][0] == TURNS_RAISED
    assert report.findings[0].shape == "AlreadyExistsError from session service X"
    console = Console(record=True, width=200)
    render_report(report, console)
    text = console.export_text()
    assert f"{report.tried} of {report.tried} examples had a turn that raised" in text
    assert "obstruction: turns raised in" in text and "mostly AlreadyExistsError from session service X" in text


def test_a_check_failing_on_every_example_that_raised_reports_the_obstruction(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.explore.findings import TURNS_RAISED

    monkeypatch.setattr("harness.run.runner.run_scenario", _raising)
    report = explore(examples=10, checks=frozenset({"none_deletes"}))  # none_deletes fails on every example
    assert TURNS_RAISED not in [f.check for f in report.findings] and "none_deletes" in [f.check for f in
                                                                                         report.findings]
    assert "reported as none_deletes" in report.obstruction
