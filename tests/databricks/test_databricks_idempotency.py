"""One delegation, one Databricks run: ``idempotency_token`` on the fake as the Jobs API documents it, and the
job runner's retry of a delegation after a crash (the same run back, or the earlier result adopted)."""

from __future__ import annotations

import asyncio
import json

import pytest
from databricks.sdk.errors import DatabricksError

from reference_agent.backends.databricks.jobs import DatabricksJobRunner
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.backends.idempotency import TOKEN_MAX_CHARS, idempotency_token
from reference_agent.backends.jobs import JobRequest

CLUSTER = "0101-000000-fakecluster"
FAST = Backoff(initial_s=0.02, factor=1.5, max_s=0.1)


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


class ProcessDied(BaseException):
    """Stands for SIGKILL inside the agent's process: nothing after it runs, no run is cancelled."""


@pytest.mark.slow
async def test_the_agents_retry_after_a_crash_between_submit_and_result_yields_one_run(settings, client, fake,
                                                                                       tmp_path) -> None:
    from google.adk.runners import Runner

    from reference_agent import state_contract as keys
    from reference_agent.app import build_app
    from reference_agent.backends.databricks import build_databricks_services
    from reference_agent.config import AgentSettings
    from reference_agent.models.scripted import Reply, ScriptedLlm
    from reference_agent.run import run_conversation
    from reference_agent.sessions.delta_session_service import DeltaSessionService

    agent_settings = AgentSettings(home=tmp_path / "home", executor_timeout_s=10.0)

    def process(script: dict) -> tuple[Runner, object]:
        services = build_databricks_services(agent_settings, settings, sub_lm=None, client=client, hermetic=True,
                                             sql_options={"backoff": FAST},
                                             runner_options={"backoff": FAST, "grace_s": 2.0})
        app = build_app(services, model=ScriptedLlm.from_script(script))
        return Runner(app=app, session_service=DeltaSessionService(services.engine)), services

    # Job_B still runs when the recovered turn retries (its result is not there to adopt): the token's case.
    code = "import time\ntime.sleep(4)\nprint(6 * 7)\n"
    first, services = process({keys.ANALYST: [Reply(call="delegate_code_results",
                                                     args={"code": code, "instruction": "report"})]})
    job_runner = services.runner

    async def submit_then_die(request, *, sub_lm):
        entry, payload = await asyncio.to_thread(job_runner._ensure_uploaded)
        await asyncio.to_thread(job_runner._submit, request, entry, payload)
        raise ProcessDied()

    job_runner.run = submit_then_die
    with pytest.raises(ProcessDied):
        await run_conversation(first, user_id="u", session_id="crashed", message="what is 6 * 7?")
    assert len(fake.jobs.runs) == 1

    second, services = process({keys.ANALYST: [Reply(call="exit_loop", args={})],
                                keys.RESULTS_PROCESSOR: [Reply(text="It is 42.")]})
    outcome = await run_conversation(second, user_id="u", session_id="crashed", message="and?")
    assert outcome.termination == "exit_loop"
    assert submits(fake) == 2 and len(fake.jobs.runs) == 1, "the recovered turn started a second Job_B run"
    session = await second.session_service.get_session(app_name=agent_settings.app_name, user_id="u",
                                                       session_id="crashed")
    assert session.state[keys.LAST_RESULTS_SUMMARY] == "It is 42."
    [artifact] = services.registry.list_for_session(agent_settings.app_name, "u", "crashed")
    assert artifact.status == "consumed"
    assert "42" in services.volume.read_text(artifact.result_json_path)


async def test_a_retried_delegation_keeps_its_exchange_answers_and_answers_only_what_waits(volume) -> None:
    """The sub-LM exchange folder is the delegation's own: a retry rejoining the run answers what is still waiting
    and never asks the model again for a request answered before the crash."""
    from reference_agent.backends.databricks.jobs import SubLmExchange, sublm_folder
    from reference_agent.backends.jobs import LmBridge

    asked: list[str] = []

    async def sub_lm(prompt: str) -> str:
        asked.append(prompt)
        return f"answer to {prompt}"

    request = JobRequest(artifact_path=volume.path("artifacts", "agent_code_s1_iter1_a1b2c3.py"), run_id="s1",
                         iteration=1, delegation_id="a1b2c3")
    folder = sublm_folder(request)
    assert folder.endswith("/sublm/s1_iter1_a1b2c3")
    assert sublm_folder(JobRequest(artifact_path=request.artifact_path, run_id="s1", iteration=1)) != folder
    volume.write_text(f"{folder}/1.request.json", json.dumps({"id": 1, "prompts": ["before"]}))
    volume.write_text(f"{folder}/1.answer.json", json.dumps({"id": 1, "responses": ["kept"], "tokens": [None]}))
    volume.write_text(f"{folder}/2.request.json", json.dumps({"id": 2, "prompts": ["waiting"]}))
    exchange = SubLmExchange(volume, folder, LmBridge(sub_lm, max_calls=8))
    exchange.resume()
    assert await exchange.serve() == 1 and asked == ["waiting"]
    assert json.loads(volume.read_text(f"{folder}/1.answer.json"))["responses"] == ["kept"]
