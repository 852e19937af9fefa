"""The crash room's parts without processes: the journal read back, what the recovery sends and serves, and
session_readable_prefix on stores that lost or invented an event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checks.base import Status
from harness.crash.checks import CombinedHistory, session_readable_prefix
from harness.crash.journal import Journal, read_journal
from harness.crash.points import CrashPoint
from harness.crash.recovery import CONTINUE_MESSAGE, RecoveryNotRun, recovery_scenario, remaining_script
from harness.result import ScenarioResult
from harness.scenario.loader import load_scenario
from harness.targets.profile import TargetProfile
from harness.trace.model import CodePartRecord, EventRecord, Trace

SCENARIO = load_scenario(Path(__file__).parents[2] / "scenarios" / "two_turns_one_session.yaml")


def record(index: int, author: str, *, calls: tuple[str, ...] = (), responses: tuple[str, ...] = (), text: str = "",
           delta: dict | None = None, session: str = "s") -> EventRecord:
    return EventRecord(index=index, session_id=session, user_id="u", turn=0, invocation_id="i", author=author,
                       emitted_delta=delta or {}, appended_delta=delta or {}, function_calls=list(calls),
                       function_responses=list(responses), text=text)


def test_a_journal_cut_by_the_kill_reads_back_its_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    lines = [{"kind": "step", "agent": "a", "index": 0},
             {"kind": "ack", "id": "e0", "record": record(0, "a", text="hi").model_dump(mode="json")},
             {"kind": "killing", "point": "after", "index": 0, "id": "e0", "author": "a"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"kind": "ack", "id"')
    journal = read_journal(path)
    assert [i for i, _ in journal.acks] == ["e0"] and journal.served == {"a": [0]}
    assert journal.killing is not None and journal.killing["id"] == "e0"


def test_the_script_continues_but_an_answer_that_died_with_the_process_is_served_again() -> None:
    analyst = next(iter(SCENARIO.script))
    journal = Journal(acks=[("e0", record(0, analyst, calls=("delegate",))),
                            ("e1", record(1, analyst, responses=("delegate",)))], served={analyst: [0, 1]})
    left = remaining_script(SCENARIO, journal)
    assert left[analyst] == list(SCENARIO.script[analyst][1:])  # step 1 answered, never acknowledged: again
    unanswered = Journal(acks=[("e0", record(0, analyst, calls=("delegate",)))], served={analyst: [0]})
    assert remaining_script(SCENARIO, unanswered)[analyst] == list(SCENARIO.script[analyst])  # its tool never ran


def test_code_an_executor_ran_is_an_answer_and_code_that_never_ran_is_asked_again() -> None:
    """ADK's code executors: the model's answer is an executable_code part (no text, no call); its result comes in
    the agent's next event. Without the result acknowledged the code died with the process."""
    analyst = next(iter(SCENARIO.script))
    code = record(0, analyst)
    code.code_parts = [CodePartRecord(kind="executable_code", code="print(1)")]
    result = record(1, analyst)
    result.code_parts = [CodePartRecord(kind="code_execution_result", outcome="OUTCOME_OK", output="1")]
    ran = Journal(acks=[("e0", code), ("e1", result)], served={analyst: [0]})
    assert remaining_script(SCENARIO, ran)[analyst] == list(SCENARIO.script[analyst][1:])
    never_ran = Journal(acks=[("e0", code)], served={analyst: [0]})
    assert remaining_script(SCENARIO, never_ran)[analyst] == list(SCENARIO.script[analyst])


def test_retry_sends_the_crashed_turn_again_and_next_turn_the_next() -> None:
    retry = recovery_scenario(SCENARIO, crashed_turn=0, journal=Journal(), recovery="retry")
    assert [t.user for t in retry.sessions[0].turns] == [t.user for t in SCENARIO.sessions[0].turns]
    assert retry.session_id(0) == SCENARIO.session_id(0) and retry.expect.executions is None
    after_last = recovery_scenario(SCENARIO, crashed_turn=1, journal=Journal(), recovery="next_turn")
    assert [t.user for t in after_last.sessions[0].turns] == [CONTINUE_MESSAGE]
    with pytest.raises(RecoveryNotRun, match="unknown recovery"):
        recovery_scenario(SCENARIO, crashed_turn=0, journal=Journal(), recovery="restart")


def history(acked: list[str], stored: list[str], *, state: dict | None = None, killing: str | None = None
            ) -> CombinedHistory:
    acks = [(i, record(n, "a", delta={"k": n})) for n, i in enumerate(acked)]
    return CombinedHistory(
        scenario=SCENARIO, uncrashed=Trace(scenario="x", target="t", llm_mode="scripted", session_service="s"),
        profile=TargetProfile(), point=CrashPoint("after", len(acked) - 1),
        journal=Journal(acks=acks, killing={"id": killing} if killing else None),
        reads={"sessions": {"s": {"ids": stored, "state": state if state is not None else {"k": len(acked) - 1}}},
               "listed": {"u": ["s"]}, "executions": []},
        recovery=ScenarioResult(scenario="x", description="", target="t", llm_mode="scripted", session_service="",
                                checks=(), trace=None, duration_s=0.0),
        recovery_scenario=SCENARIO)


def test_session_readable_prefix_passes_a_store_holding_exactly_what_was_acknowledged() -> None:
    assert session_readable_prefix(history(["e0", "e1"], ["e0", "e1"])).status is Status.PASS
    assert session_readable_prefix(history(["e0"], ["e0", "e1"], state={"k": 0}, killing="e1")).status is Status.PASS


@pytest.mark.parametrize(("acked", "stored", "state", "says"), [
    (["e0", "e1"], ["e0"], {"k": 1}, "not in the store"),
    (["e0"], ["e0", "ghost"], {"k": 0}, "never acknowledged"),
    (["e0", "e1"], ["e0", "e1"], {"k": 0}, "as acknowledged"),
])
def test_session_readable_prefix_fails_a_store_that_lost_or_invented_a_write(acked: list[str], stored: list[str],
                                                                          state: dict, says: str) -> None:
    result = session_readable_prefix(history(acked, stored, state=state))
    assert result.status is Status.FAIL and says in " ".join(result.evidence)


def test_session_readable_prefix_fails_an_unreadable_session() -> None:
    broken = history(["e0"], ["e0"])
    broken.reads["sessions"]["s"] = {"error": "OperationalError: database disk image is malformed"}
    result = session_readable_prefix(broken)
    assert result.status is Status.FAIL and "malformed" in " ".join(result.evidence)


def test_a_databricks_replay_cannot_crash_but_its_fake_can() -> None:
    """A replay answers from the cassette: nothing the killed run wrote is there (n/a, said before any run). The
    fake is kept by the matrix's process (Backend.crash_workspace), so the scripted mode can crash."""
    from harness.llm.modes import LlmMode
    from harness.run.options import RunOptions
    from harness.targets.plugins import backend

    databricks = backend("databricks")
    assert "nothing the killed process wrote is there" in databricks.crash_matrix(RunOptions(backend="databricks"))
    assert databricks.crash_matrix(RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED)) is None
    assert databricks.crash_workspace is not None


def test_a_scenario_declares_a_submitted_point_alone() -> None:
    from pydantic import ValidationError

    from harness.scenario.models import CrashAt

    assert CrashAt(submitted=0).point == ("submitted", 0)
    with pytest.raises(ValidationError, match="exactly one of"):
        CrashAt(after="job_builder", submitted=0)


def test_submitted_points_take_the_next_events_turn_and_fall_in_run_order() -> None:
    from harness.crash.points import crash_points, in_run_order, submitted_points

    trace = Trace(scenario="x", target="t", llm_mode="scripted", session_service="s",
                  events=[record(0, "user"), record(1, "analyst"), record(2, "job_builder"), record(3, "analyst")])
    [point] = submitted_points(trace, [1])
    assert (point.kind, point.index, point.author, point.label) == ("submitted", 0, "job_builder",
                                                                    "submitted #0 (job_builder)")
    ordered = in_run_order(crash_points(trace), [point], [1])
    assert [p.label for p in ordered] == ["after #0 (user)", "after #1 (analyst)", "submitted #0 (job_builder)",
                                          "after #2 (job_builder)", "after #3 (analyst)"]


def ledger_line(ordinal: int, phase: str, *, token: str | None, started: bool = True, task: str = "entry.py --a 1"):
    from harness.crash.workspace import RunSubmitted
    from harness.databricks_fake import Submit

    return RunSubmitted(Submit(ordinal, 1001 if not started or ordinal == 0 else 1001 + 2 * ordinal, token, started,
                               task, executed=started), phase)


@pytest.mark.parametrize(("point", "status", "says"), [
    ([ledger_line(0, "crashed run", token="t"), ledger_line(1, "recovery", token="t", started=False)], Status.PASS,
     "1 submit(s) got an earlier run back"),
    ([ledger_line(0, "crashed run", token=None), ledger_line(1, "recovery", token=None)], Status.FAIL,
     "executed one task 2 times (the uncrashed run: 1): run 1001 submitted by the crashed run with no "
     "idempotency_token; run 1003 submitted by the recovery"),
    ([ledger_line(0, "crashed run", token="t"), ledger_line(1, "recovery", token="u", task="entry.py --a 2")],
     Status.FAIL, "executed 2 job run(s) across the crash and the recovery, the uncrashed run 1"),
])
def test_effects_exactly_once_reads_the_workspaces_ledger(point: list, status: Status, says: str) -> None:
    """What the target recorded passes (no execution listed, no execution event): the ledger alone decides."""
    from harness.crash.checks import WorkspaceRuns, effects_exactly_once

    h = history(["e0"], ["e0"])
    h.workspace_runs = WorkspaceRuns([ledger_line(0, "uncrashed run", token="t")], point)
    result = effects_exactly_once(h)
    assert result.status is status and says in " ".join((result.explanation, *result.evidence))
