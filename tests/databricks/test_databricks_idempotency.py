"""One delegation, one Databricks run: ``idempotency_token`` on the fake as the Jobs API documents it, and the
job runner's retry of a delegation after a crash (the same run back, or the earlier result adopted)."""

from __future__ import annotations

import asyncio

import pytest
from databricks.sdk.errors import DatabricksError

from reference_agent.backends.databricks.jobs import DatabricksJobRunner
from reference_agent.backends.idempotency import TOKEN_MAX_CHARS, idempotency_token
from reference_agent.backends.jobs import JobRequest

CLUSTER = "0101-000000-fakecluster"


def submit(client, volume, *, token: str | None) -> int:
    path = volume.path("scripts", "task.py")
    volume.write_text(path, "print('ran')\n")
    body = {"tasks": [{"task_key": "t", "existing_cluster_id": CLUSTER, "spark_python_task": {"python_file": path}}]}
    if token is not None:
        body["idempotency_token"] = token
    return client.api_client.do("POST", "/api/2.2/jobs/runs/submit", body=body)["run_id"]


def submits(fake) -> int:
    return sum(1 for method, target in fake.requests if method == "POST" and target.endswith("/runs/submit"))


def test_the_same_token_returns_the_first_run_and_starts_no_second(client, volume, fake) -> None:
    first = submit(client, volume, token="delegation-1")
    assert submit(client, volume, token="delegation-1") == first
    assert submit(client, volume, token="delegation-2") != first
    assert len(fake.jobs.runs) == 2


def test_without_a_token_every_submit_starts_a_run(client, volume, fake) -> None:
    assert submit(client, volume, token=None) != submit(client, volume, token=None)
    assert len(fake.jobs.runs) == 2


def test_a_token_over_64_characters_is_refused(client, volume, fake) -> None:
    with pytest.raises(DatabricksError, match="at most 64 characters"):
        submit(client, volume, token="x" * 65)
    assert not fake.jobs.runs


def test_the_agents_token_is_stable_per_delegation_and_within_the_limit() -> None:
    token = idempotency_token(run_id="s" * 200, iteration=3, delegation_id="a1b2c3")
    assert token == idempotency_token(run_id="s" * 200, iteration=3, delegation_id="a1b2c3")
    assert len(token) <= TOKEN_MAX_CHARS
    assert token != idempotency_token(run_id="s" * 200, iteration=3, delegation_id="d4e5f6")
    assert idempotency_token(run_id="s", iteration=3, delegation_id=None) is None


async def no_sub_lm(prompt: str) -> str:
    raise AssertionError("no llm_query here")


def delegation(runner: DatabricksJobRunner, *, delegation_id: str | None = "a1b2c3") -> JobRequest:
    artifact = runner.volume.path("artifacts", "agent_code_s1_iter1_a1b2c3.py")
    runner.volume.write_text(artifact, "print('side effect')\n")
    return JobRequest(artifact_path=artifact, run_id="s1", iteration=1, timeout_s=10.0, delegation_id=delegation_id)


@pytest.mark.slow
async def test_a_retry_after_a_crash_between_submit_and_result_gets_the_first_run(runner, fake) -> None:
    request = delegation(runner)
    entry, payload = await asyncio.to_thread(runner._ensure_uploaded)
    crashed_run = await asyncio.to_thread(runner._submit, request, entry, payload)  # then the process died

    outcome = await runner.run(request, sub_lm=no_sub_lm)  # the recovered process runs the delegation again
    assert outcome.runner_state == "SUCCESS"
    assert submits(fake) == 2, "the retry should submit again (Job_B was still starting), with the same token"
    assert list(fake.jobs.runs) == [crashed_run], "the retry started a second Job_B run"
    assert '"side effect' in runner.volume.read_text(outcome.result_json_path)


@pytest.mark.slow
async def test_a_retry_after_the_result_adopts_it_without_submitting(runner, fake) -> None:
    request = delegation(runner)
    first = await runner.run(request, sub_lm=no_sub_lm)
    again = await runner.run(request, sub_lm=no_sub_lm)
    assert again.result_json_path == first.result_json_path and again.runner_state == "SUCCESS"
    assert submits(fake) == 1 and len(fake.jobs.runs) == 1


@pytest.mark.slow
async def test_a_request_without_a_delegation_runs_again_and_sends_no_token(runner, fake) -> None:
    request = delegation(runner, delegation_id=None)
    await runner.run(request, sub_lm=no_sub_lm)
    await runner.run(request, sub_lm=no_sub_lm)
    assert submits(fake) == 2 and len(fake.jobs.runs) == 2


@pytest.mark.slow
async def test_another_delegations_result_at_the_path_is_never_adopted(runner, fake) -> None:
    await runner.run(delegation(runner, delegation_id=None), sub_lm=no_sub_lm)
    other = runner.volume.path("artifacts", "agent_code_s1_iter1_ffffff.py")
    runner.volume.write_text(other, "print('other')\n")
    outcome = await runner.run(JobRequest(artifact_path=other, run_id="s1", iteration=1, timeout_s=10.0,
                                          delegation_id="ffffff"), sub_lm=no_sub_lm)
    assert "other" in runner.volume.read_text(outcome.result_json_path)
    assert len(fake.jobs.runs) == 2
