"""A scenario's ``concurrent:`` case (harness/crash/concurrent.py): its turns sent by runners at once, judged by the
client-observed history check — green on the reference store, failing by the named witness on the reference store
without its version check (tests/contract/concurrent_services.py), n/a on an in-memory service; ``run`` skips it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.cli import EXIT_OK, main
from harness.contract.history import Op
from harness.crash.concurrent import (CHECK, SURFACED, ConcurrentDriver, ConcurrentReport, Lockstep, concurrent_run,
                                      history_result, runner_plans)
from harness.crash.selection import report_lines
from harness.run.options import RunOptions
from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
DOUBLE_SUBMIT = load_scenario(SCENARIOS / "concurrent_double_submit.yaml")
UNCHECKED = "tests.contract.concurrent_services:unchecked_delta_file"
UNVERSIONED = "tests.contract.concurrent_services:unversioned_delta_file"
BROKEN = "tests.crash.concurrent_broken_targets"
TEXT = (SCENARIOS / "concurrent_double_submit.yaml").read_text(encoding="utf-8")
SAME_USER = load_scenario(SCENARIOS / "concurrent_same_user.yaml")


def scenario_from(text: str, tmp_path: Path):
    return parse_scenario(text, path=str(tmp_path / "concurrent_double_submit.yaml"), stem="concurrent_double_submit")


# --- the field ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "said"), [
    ("concurrent: {runners: 3, sessions: same}", "3 runners need one session"),
    ("concurrent: {runners: 2, sessions: same}\ncrash: {after: 0}", "not both"),
    ("concurrent: {runners: 1}", "expected a number >= 2"),
])
def test_a_concurrent_field_that_cannot_run_is_an_error_naming_it(change: str, said: str, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        scenario_from(TEXT.replace("concurrent: {runners: 2, sessions: same}", change), tmp_path)
    assert said in str(caught.value) and "concurrent" in str(caught.value)


def test_runners_of_two_sessions_on_one_id_or_each_its_own(tmp_path: Path) -> None:
    same = runner_plans(DOUBLE_SUBMIT)
    assert [(p[1], p[2][0].user) for p in same] == [
        ("concurrent_double_submit-0", "Hello, what can you do?"),
        ("concurrent_double_submit-0", "Hi, what data can you analyse?")]
    per = runner_plans(scenario_from(TEXT.replace("sessions: same", "sessions: per_runner"), tmp_path))
    assert [p[1] for p in per] == ["concurrent_double_submit-0", "concurrent_double_submit-1"]
    assert {p[0] for p in per} == {"analyst_1"}


# --- the verdict on histories ---------------------------------------------------------------------------------------

def _append(process: str, seq: int, start: int, end: int, history: list[str], *, ok: bool = True) -> Op:
    return Op(process=process, seq=seq, kind="append", app="a", user="u", session="s", start=start, end=end, ok=ok,
              error="" if ok else "StaleSessionError: The session has been modified in storage since it was loaded",
              delta={"user:rlm:history": history}, event=f"{process}-{seq}")


def _read(process: str, seq: int, start: int, end: int, history: list[str], events: tuple[str, ...]) -> Op:
    return Op(process=process, seq=seq, kind="read", app="a", user="u", session="s", start=start, end=end,
              state={"user:rlm:history": history}, events=events)


def test_a_lost_history_entry_fails_with_its_witness_and_a_refused_runner_passes() -> None:
    lost = ConcurrentDriver(ops=[_read("r0", 0, 0, 1, [], ()), _read("r1", 0, 0, 1, [], ()),
                                 _append("r0", 1, 2, 3, ["q0"]), _append("r1", 1, 4, 5, ["q1"])],
                            finals=[_read("final", 0, 9, 10, ["q1"], ("r0-1", "r1-1"))])
    check, verdict = history_result(lost)
    assert check.failed and verdict.names() == {"lost_update"}
    assert "r0#1 append" in check.evidence[0] and any("r1#1 append" in line for line in check.evidence)
    refused = ConcurrentDriver(ops=[_read("r0", 0, 0, 1, [], ()), _read("r1", 0, 0, 1, [], ()),
                                    _append("r0", 1, 2, 3, ["q0"]), _append("r1", 1, 4, 5, ["q1"], ok=False)],
                               finals=[_read("final", 0, 9, 10, ["q0"], ("r0-1",))])
    check, _ = history_result(refused)
    assert check.status.value == "pass" and "1 of them a conflict" in check.explanation


def test_runners_that_never_overlapped_are_not_judged_saying_why() -> None:
    apart = ConcurrentDriver(ops=[_read("r0", 0, 0, 1, [], ()), _append("r0", 1, 2, 3, ["q0"]),
                                  _read("r1", 0, 4, 5, ["q0"], ("r0-1",)), _append("r1", 1, 6, 7, ["q0", "q1"])],
                             finals=[_read("final", 0, 9, 10, ["q0", "q1"], ("r0-1", "r1-1"))])
    check, _ = history_result(apart)
    assert check.status.value == "n/a" and "never ran at the same time" in check.explanation


def test_lockstep_puts_every_runners_read_before_anyones_write_and_waits_for_no_finished_runner() -> None:
    async def scenario() -> list[str]:
        lockstep, log = Lockstep(3), []

        async def runner(index: int, delay: float) -> None:
            try:
                if index == 2:
                    return  # a runner that finished before writing anything
                for step in range(2):
                    await asyncio.sleep(delay)  # one runner slower than the other
                    log.append(f"read r{index}#{step}")
                    await lockstep.write(index)
                    log.append(f"write r{index}#{step}")
            finally:
                await lockstep.finished(index)

        await asyncio.wait_for(asyncio.gather(runner(0, 0.0), runner(1, 0.05), runner(2, 0.0)), 5)
        return log

    log = asyncio.run(scenario())
    for step in range(2):
        reads = [log.index(f"read r{i}#{step}") for i in range(2)]
        writes = [log.index(f"write r{i}#{step}") for i in range(2)]
        assert max(reads) < min(writes), log


# --- end to end: the reference agent ----------------------------------------------------------------------------

def history_check(report: ConcurrentReport):
    assert report.error is None, report.error
    [check] = [c for c in report.checks if c.name == CHECK]
    return check


@pytest.mark.slow
def test_the_reference_store_keeps_every_acknowledged_write_of_a_double_submit() -> None:
    report = concurrent_run(DOUBLE_SUBMIT, RunOptions())
    check = history_check(report)
    assert check.status.value == "pass", "\n".join(report_lines(report))
    assert not report.failed, "\n".join(report_lines(report))
    assert report.concurrent["overlapped"] and report.concurrent["anomalies"] == []
    # The runner that came second was told: its append refused with the store's stale-session error.
    assert report.concurrent["refused"] >= 1 and any("StaleSessionError" in e for e in report.concurrent["turn_errors"])
    assert {c.name: c.status.value for c in report.checks}[SURFACED] == "pass"


@pytest.mark.slow
def test_the_reference_store_keeps_both_history_entries_or_refuses_one_across_two_sessions_of_a_user() -> None:
    report = concurrent_run(SAME_USER, RunOptions())
    assert not report.failed, "\n".join(report_lines(report))
    assert history_check(report).status.value == "pass" and report.concurrent["sessions"] == "per_runner"
    # The history write that came second was refused by its user: key's check, and its turn was ended by it.
    assert report.concurrent["refused"] >= 1 and any("StaleSessionError" in e for e in report.concurrent["turn_errors"])


@pytest.mark.slow
@pytest.mark.parametrize("sessions", ["same", "per_runner"])
def test_the_store_without_its_version_check_loses_a_history_entry(sessions: str, tmp_path: Path) -> None:
    scenario = scenario_from(TEXT.replace("sessions: same", f"sessions: {sessions}"), tmp_path)
    report = concurrent_run(scenario, RunOptions(session_service=UNCHECKED))
    check = history_check(report)
    assert check.failed and report.failed
    assert check.evidence[0].startswith("lost_update (user:rlm:history): ")
    assert "minimal witness:" in check.evidence[1]
    assert report.concurrent["refused"] == 0


@pytest.mark.slow
def test_the_store_without_its_session_version_check_forks_a_double_submit() -> None:
    """Its user:/app: key checks refuse the stale history write, so nothing acknowledged is lost: both runners'
    first appends are taken on an empty view, and the one stored second did not see the first."""
    report = concurrent_run(DOUBLE_SUBMIT, RunOptions(session_service=UNVERSIONED))
    check = history_check(report)
    assert check.failed and report.failed, "\n".join(report_lines(report))
    assert check.evidence[0].startswith("stale_append ("), check.evidence
    assert "on a view of no events): acknowledged" in "\n".join(check.evidence)


@pytest.mark.slow
def test_a_teams_own_service_checking_only_its_session_loses_a_users_history_across_two_sessions() -> None:
    """tests/user_agents/home_made_sessions: ADK's in-memory service subclassed to refuse a stale writer of a session
    (by its event count), judged in one process as deployed; the user: keys two sessions share have no check."""
    team = "tests.user_agents.home_made_sessions.sessions:TeamSessions"
    double = concurrent_run(DOUBLE_SUBMIT, RunOptions(session_service=team))
    assert not double.failed and any("VersionConflict" in e for e in double.concurrent["turn_errors"])
    across = concurrent_run(SAME_USER, RunOptions(session_service=team))
    assert history_check(across).evidence[0].startswith("lost_update (user:rlm:history): ")


@pytest.mark.slow
def test_an_in_memory_service_is_not_applicable_saying_why() -> None:
    report = concurrent_run(DOUBLE_SUBMIT, RunOptions(session_service="adk-memory"))
    assert not report.failed and report.checks == ()
    assert "InMemorySessionService lives in one process's memory" in report.not_applicable


@pytest.mark.parametrize("verb", ["run", "record"])
def test_run_and_record_skip_a_concurrent_case_saying_crash_runs_it(verb: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main([verb, "--scenario", "concurrent_double_submit", "--scenarios-dir", str(SCENARIOS),
                 "--reports-dir", str(tmp_path), "--cassette-dir", str(tmp_path / "cassettes"), "--llm-mode",
                 "scripted", "--no-progress"]) == EXIT_OK
    assert not (tmp_path / "cassettes").exists()
    out = " ".join(capsys.readouterr().out.split())
    assert "skipped: concurrent_double_submit is a concurrent case" in out
    assert "rlm-conformance crash concurrent_double_submit" in out and "0 scenarios" in out


@pytest.mark.slow
def test_a_turn_that_hides_its_refused_write_fails_conflicts_surfaced() -> None:
    report = concurrent_run(DOUBLE_SUBMIT, RunOptions(target=f"{BROKEN}:swallows_conflicts"))
    checks = {c.name: c for c in report.checks}
    assert checks[SURFACED].failed, "\n".join(report_lines(report))
    assert "ended without an error, yet r" in checks[SURFACED].evidence[0]
    assert "StaleSessionError" in checks[SURFACED].evidence[0]
    assert checks[CHECK].status.value == "pass"  # the store lost nothing: the agent hid the conflict
