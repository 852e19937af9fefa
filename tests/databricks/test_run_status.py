"""Reading a run from runs/get: Jobs 2.2 ``status`` first, the deprecated ``state`` for answers without it."""

from __future__ import annotations

import pytest
from databricks.sdk.service import jobs as jobs_api

from reference_agent.backends.databricks.run_status import describe_failure, ending_of, is_terminal, state_of


def run(**fields) -> jobs_api.Run:
    return jobs_api.Run.from_dict({"run_id": 7, **fields})


def test_status_wins_over_the_deprecated_state() -> None:
    both = run(state={"life_cycle_state": "RUNNING"},
               status={"state": "TERMINATED", "termination_details": {
                   "code": "RUN_EXECUTION_ERROR", "type": "CLIENT_ERROR", "message": "Task failed"}})
    assert is_terminal(both)
    ending = ending_of(both)
    assert (ending.code, ending.type, ending.message) == ("RUN_EXECUTION_ERROR", "CLIENT_ERROR", "Task failed")
    assert state_of(run(status={"state": "QUEUED", "queue_details": {"code": "ACTIVE_RUNS_LIMIT_REACHED",
                                                                      "message": "Queued: run limit"}})) == (
        "QUEUED", "Queued: run limit")
    assert not is_terminal(run(status={"state": "TERMINATING"}, state={"life_cycle_state": "TERMINATED"}))


@pytest.mark.parametrize("state, code", [
    ({"life_cycle_state": "TERMINATED", "result_state": "SUCCESS"}, "SUCCESS"),
    ({"life_cycle_state": "TERMINATED", "result_state": "FAILED"}, "RUN_EXECUTION_ERROR"),
    ({"life_cycle_state": "TERMINATED", "result_state": "TIMEDOUT"}, "CANCELED"),
    ({"life_cycle_state": "TERMINATED", "result_state": "CANCELED"}, "CANCELED"),
    ({"life_cycle_state": "INTERNAL_ERROR", "result_state": "FAILED"}, "INTERNAL_ERROR"),
    ({"life_cycle_state": "SKIPPED"}, "SKIPPED"),
])
def test_an_answer_without_status_is_read_from_state(state, code) -> None:
    old = run(state={**state, "state_message": "m"})
    assert is_terminal(old) and ending_of(old).code == code and ending_of(old).message == "m"


def test_an_old_timeout_still_says_timeout() -> None:
    ending = ending_of(run(state={"life_cycle_state": "TERMINATED", "result_state": "TIMEDOUT"}))
    assert "timeout_seconds (TIMEDOUT)" in describe_failure(ending, "/Volumes/x/result.json")
    assert not is_terminal(run(state={"life_cycle_state": "PENDING", "state_message": "Waiting"}))
    assert state_of(run(state={"life_cycle_state": "PENDING", "state_message": "Waiting"})) == ("PENDING", "Waiting")
