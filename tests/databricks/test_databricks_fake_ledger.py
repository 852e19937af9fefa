"""The fake's own record of job runs (the crash matrix's ground truth of "effects exactly once"), a submit whose
client is gone (``on_submit`` raising ``NoReply``: no answer, the run held PENDING until the next Jobs request),
and Job_B's environment set from another process (``RemoteFake``)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request

import pytest

from harness.databricks_fake import NoReply, RemoteFake, Submit

CLUSTER = "0101-000000-fakecluster"


def body(volume, token: str | None) -> dict:
    path = volume.path("scripts", "task.py")
    volume.write_text(path, "print('ran')\n")
    sent = {"tasks": [{"task_key": "t", "existing_cluster_id": CLUSTER,
                       "spark_python_task": {"python_file": path, "parameters": ["--x", "1"]}}]}
    return sent | ({"idempotency_token": token} if token is not None else {})


def submit(client, volume, *, token: str | None) -> int:
    return client.api_client.do("POST", "/api/2.2/jobs/runs/submit", body=body(volume, token))["run_id"]


def submit_once(fake, volume, *, token: str | None) -> None:
    """One submit and no retry (the SDK would retry a connection closed without an answer; a killed client does
    not): the answer never comes."""
    request = urllib.request.Request(fake.host + "/api/2.2/jobs/runs/submit", method="POST",
                                     data=json.dumps(body(volume, token)).encode("utf-8"),
                                     headers={"Authorization": f"Bearer {fake.token}"})
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, urllib.error.URLError)):
        urllib.request.urlopen(request, timeout=10)  # noqa: S310 - the fake on loopback


def test_the_ledger_says_which_submits_started_runs_and_which_ran_code(client, volume, fake) -> None:
    first = submit(client, volume, token="d-1")
    assert submit(client, volume, token="d-1") == first
    second = submit(client, volume, token=None)
    ledger = fake.jobs.ledger()
    assert [(s.run_id, s.idempotency_token, s.started_run, s.executed, s.created) for s in ledger] == [
        (first, "d-1", True, True, 0), (first, "d-1", False, False, 0), (second, None, True, True, 1)]
    assert ledger[0].task == ledger[2].task and ledger[0].task.endswith("task.py --x 1")


def test_a_submit_whose_client_is_gone_gets_no_answer_and_its_run_waits_for_the_next_request(client, volume,
                                                                                              fake) -> None:
    told: list[Submit] = []

    def gone(submitted: Submit) -> None:
        told.append(submitted)
        raise NoReply

    fake.jobs.on_submit = gone
    submit_once(fake, volume, token="d-1")
    fake.jobs.on_submit = None
    [held] = told
    assert fake.jobs.ledger()[0].executed is False  # its compute was not up: nothing ran yet
    assert submit(client, volume, token="d-1") == held.run_id  # the retry rejoins it, and its compute comes up
    deadline = time.time() + 10
    while client.jobs.get_run(held.run_id).status.state.value != "TERMINATED" and time.time() < deadline:
        time.sleep(0.05)
    assert [s.executed for s in fake.jobs.ledger()] == [True, False]
    assert len(fake.jobs.runs) == 1


def test_a_held_run_launches_when_asked(volume, fake) -> None:
    def gone(submitted: Submit) -> None:
        raise NoReply

    fake.jobs.on_submit = gone
    submit_once(fake, volume, token=None)
    fake.jobs.on_submit = None
    fake.jobs.launch_held()
    assert [s.executed for s in fake.jobs.ledger()] == [True]


def test_job_b_environment_is_set_from_another_process(fake) -> None:
    remote = RemoteFake(fake.address)
    remote.set_job_env({"GOOGLE_API_KEY": "k", "EXTRA": "x"})
    remote.set_job_env({"EXTRA": None})
    assert fake.job_env == {"GOOGLE_API_KEY": "k"}
