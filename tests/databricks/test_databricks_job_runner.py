"""DatabricksJobRunner against the fake's Jobs API 2.2: Job_B runs as a local subprocess behind runs/submit."""

from __future__ import annotations

import json

import pytest

from reference_agent.backends.databricks.errors import (
    DatabricksJobError,
    DatabricksTimeoutError,
)
from reference_agent.backends.databricks.jobs import DatabricksJobRunner, JobCompute
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.backends.jobs import JobRequest, JobRunner

TRACE = ('Traceback (most recent call last):\n  File "/Volumes/main/rlm/vol/rlm/_rlm/jobb_entry.py", line 54, in '
         '<module>\nModuleNotFoundError: No module named \'reference_agent\'')


async def no_sub_lm(prompt: str) -> str:
    raise AssertionError("the Databricks runner never answers llm_query on the host")


async def run_code(runner: DatabricksJobRunner, code: str, *, iteration: int = 1, context=None, timeout_s=10.0):
    volume = runner.volume
    artifact = volume.path("artifacts", f"agent_code_s1_iter{iteration}.py")
    volume.write_text(artifact, code)
    context_path = None
    if context is not None:
        context_path = volume.path("context", "context.json")
        volume.write_text(context_path, json.dumps(context))
    request = JobRequest(artifact_path=artifact, run_id="s1", iteration=iteration, context_path=context_path,
                         timeout_s=timeout_s)
    return await runner.run(request, sub_lm=no_sub_lm)


def test_job_compute_shapes_the_submitted_task() -> None:
    from databricks.sdk.service.jobs import SubmitTask

    cluster = SubmitTask(task_key="t")
    assert JobCompute(existing_cluster_id="c1", wheel="/Volumes/a/b/c/w.whl").apply(cluster) is None
    assert cluster.as_dict()["existing_cluster_id"] == "c1"
    assert cluster.as_dict()["libraries"] == [{"whl": "/Volumes/a/b/c/w.whl"}]
    new = SubmitTask(task_key="t")
    spec = {"spark_version": "15.4.x-scala2.12", "num_workers": 0}
    JobCompute(new_cluster=spec, genai_secret="rlm/google").apply(new)
    assert new.as_dict()["new_cluster"]["spark_env_vars"] == {"GOOGLE_API_KEY": "{{secrets/rlm/google}}"}
    serverless = SubmitTask(task_key="t")
    (env,) = JobCompute(serverless_environment_version="2", wheel="/Volumes/a/b/c/w.whl").apply(serverless)
    assert serverless.environment_key == env.environment_key
    assert env.as_dict()["spec"] == {"environment_version": "2", "dependencies": ["/Volumes/a/b/c/w.whl"]}
    with pytest.raises(ValueError, match="exactly one"):
        JobCompute(existing_cluster_id="c1", serverless_environment_version="2")


@pytest.mark.slow
async def test_success_with_context(runner: DatabricksJobRunner, fake) -> None:
    assert isinstance(runner, JobRunner)
    outcome = await run_code(runner, "print(context['q'])\nFINAL(context['q'].upper())\n", context={"q": "hi"})
    assert outcome.runner_state == "SUCCESS"  # status.termination_details.code
    assert outcome.run_url and outcome.run_url.startswith(fake.host) and "/run/" in outcome.run_url
    assert outcome.result_json_path == runner.volume.path("artifacts", "result_s1_iter1.json")
    result = json.loads(runner.volume.read_text(outcome.result_json_path))
    assert (result["status"], result["stdout"], result["final_answer"]) == ("success", "hi\n", "HI")
    submitted = [t for m, t in fake.requests if t.startswith("/api/2.2/jobs/runs/")]
    assert submitted[0] == "/api/2.2/jobs/runs/submit" and all("get?run_id=" in t for t in submitted[1:])
    # The code's own errors are results, not job failures.
    outcome = await run_code(runner, "1 / 0\n", iteration=2)
    result = json.loads(runner.volume.read_text(outcome.result_json_path))
    assert outcome.runner_state == "SUCCESS" and result["error"]["type"] == "ZeroDivisionError"


def result_calls(runner: DatabricksJobRunner, outcome) -> list:
    return json.loads(runner.volume.read_text(outcome.result_json_path))["sublm_calls"]


async def test_llm_query_raises_a_clear_error_on_databricks(runner: DatabricksJobRunner) -> None:
    outcome = await run_code(runner, "print(llm_query('hi'))\n")
    error = json.loads(runner.volume.read_text(outcome.result_json_path))["error"]
    assert error["type"] == "SubLmError"
    assert "not available in Job_B on Databricks" in error["message"]
    assert result_calls(runner, outcome) == []  # refused before anything was counted
    assert "RLM_DATABRICKS_GENAI_SECRET" in error["message"]


@pytest.mark.slow
async def test_direct_mode_job_b_calls_the_model_itself(client, volume, fake) -> None:
    from harness.llm.scripted_endpoint import ScriptedEndpoint
    from harness.scenario.script import SUB_LM, TextStep

    runner = DatabricksJobRunner(client, volume, JobCompute(existing_cluster_id="0101-000000-fakecluster"),
                                 grace_s=2.0, startup_s=10.0, backoff=Backoff(initial_s=0.02, factor=1.5, max_s=0.1),
                                 model="gemini-2.5-flash")
    # No key on the compute: a clear error naming the variable and the secret-scope setting.
    outcome = await run_code(runner, "print(llm_query('hi'))\n")
    error = json.loads(runner.volume.read_text(outcome.result_json_path))["error"]
    assert error["type"] == "SubLmError"
    assert "GOOGLE_API_KEY" in error["message"] and "RLM_DATABRICKS_GENAI_SECRET" in error["message"]
    with ScriptedEndpoint({SUB_LM: [TextStep(text="positive"), TextStep(text="x"), TextStep(text="x")]}) as endpoint:
        fake.job_env.update(GOOGLE_API_KEY="scripted-dummy-key", GOOGLE_GEMINI_BASE_URL=endpoint.base_url)
        outcome = await run_code(runner, "print(llm_query('Sentiment of: good'))\n"
                                         "print(llm_query_batched(['a', 'b']))\n", iteration=2)
        assert [c.agent for c in endpoint.calls] == [SUB_LM] * 3
    result = json.loads(runner.volume.read_text(outcome.result_json_path))
    assert result["status"] == "success" and result["stdout"] == "positive\n['x', 'x']\n"
    assert [(c["batched"], c["batch_size"], c["tokens"]) for c in result["sublm_calls"]] == [
        (False, 1, 4), (True, 2, 2), (True, 2, 2)]


async def test_stale_result_is_removed_before_the_run(runner: DatabricksJobRunner, fake) -> None:
    stale = runner.volume.path("artifacts", "result_s1_iter1.json")
    runner.volume.write_text(stale, json.dumps({"status": "success", "stdout": "stale"}))
    fake.faults.fail_runs_with = TRACE
    with pytest.raises(DatabricksJobError):
        await run_code(runner, "print('fresh')\n")
    assert not runner.volume.exists(stale)


async def test_failed_run_names_traceback_and_run_page(runner: DatabricksJobRunner, fake) -> None:
    fake.faults.fail_runs_with = TRACE
    with pytest.raises(DatabricksJobError) as info:
        await run_code(runner, "print(1)\n")
    message = str(info.value)
    assert "failed (RUN_EXECUTION_ERROR) before writing its result JSON" in message
    assert "Error: ModuleNotFoundError: No module named 'reference_agent'" in message
    assert "Traceback (from runs/get-output)" in message and "jobb_entry.py" in message
    assert f"Run page: {fake.host}/?o=" in message
    # get-output was asked for the task run, not the submitted (parent) run.
    (output_call,) = [t for m, t in fake.requests if "get-output" in t]
    parent = int(next(t for m, t in fake.requests if "runs/get?" in t).rsplit("=", 1)[1])
    assert output_call.endswith(f"run_id={parent + 1}")


@pytest.mark.slow
async def test_process_that_dies_without_result_gets_a_runner_result(runner: DatabricksJobRunner) -> None:
    # As LocalJobRunner: jobb_entry supervises the executor and writes the result the dead process could not.
    outcome = await run_code(runner, "import os\nprint('before', flush=True)\nos._exit(3)\n")
    assert outcome.runner_state == "RUN_EXECUTION_ERROR"
    result = json.loads(runner.volume.read_text(outcome.result_json_path))
    assert (result["status"], result["exit_code"], result["written_by"]) == ("exit", 3, "runner")
    assert "exited with code 3" in result["error"]["message"]
    outcome = await run_code(runner, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", iteration=2)
    result = json.loads(runner.volume.read_text(outcome.result_json_path))
    assert (result["status"], result["signal"], result["error"]["type"]) == ("killed", 9, "Killed")


@pytest.mark.parametrize("ending, expected", [
    (("INTERNAL_ERROR", "Cluster 0101 was terminated: CLOUD_PROVIDER_LAUNCH_FAILURE"),
     r"(?s)ended in INTERNAL_ERROR: the platform failed.*Termination message: .*CLOUD_PROVIDER_LAUNCH_FAILURE.*"
     r"Run page: http"),
    (("CLOUD_FAILURE", "Cloud provider resource stockout"),
     r"(?s)ended in CLOUD_FAILURE: the platform failed.*stockout.*Run page"),
    (("LIBRARY_INSTALLATION_ERROR", "Library installation failed"),
     r"(?s)could not install its library, Job_B's payload wheel.*Python >= 3.10.*Run page"),
    (("SKIPPED", "Skipped: maximum concurrent runs reached"), r"(?s)was SKIPPED.*maximum concurrent.*Run page"),
    (("TIMEDOUT", "Run timed out after 917 seconds."),
     r"(?s)CANCELED because it hit the run's timeout_seconds \(TIMEDOUT\).*Run page"),
    (("CANCELED", "Run cancelled by the platform."), r"(?s)was CANCELED by the platform.*Run page"),
    (("USER_CANCELED", "Run cancelled by a user."), r"(?s)cancelled by a user \(USER_CANCELED\).*Run page"),
    (("RUN_EXECUTION_ERROR", "Workload failed"), r"(?s)failed \(RUN_EXECUTION_ERROR\).*Run page"),
    (("SUCCESS", ""), r"(?s)succeeded but its result JSON .* is not in the volume.*Run page"),
])
async def test_every_termination_is_a_clear_error(runner: DatabricksJobRunner, fake, ending, expected) -> None:
    fake.faults.end_runs_with = ending
    with pytest.raises(DatabricksJobError, match=expected):
        await run_code(runner, "print(1)\n")


async def test_result_json_404_after_success_is_a_clear_error(runner: DatabricksJobRunner, fake) -> None:
    fake.faults.files_404 = r"/result_[^/]*\.json$"
    with pytest.raises(DatabricksJobError, match=r"(?s)succeeded but its result JSON .*result_s1_iter1.json is not "
                                                 r"in the volume \(Files API 404\).*Run page"):
        await run_code(runner, "print('done')\n")


async def test_run_past_its_deadline_is_cancelled(client, volume, fake) -> None:
    clock = [0.0]

    async def virtual_sleep(seconds: float) -> None:
        clock[0] += seconds

    runner = DatabricksJobRunner(client, volume, JobCompute(serverless_environment_version="2"), grace_s=2.0,
                                 startup_s=30.0, backoff=Backoff(1.0, 2.0, 8.0), sleep=virtual_sleep,
                                 clock=lambda: clock[0])
    fake.faults.runs_stay_pending = True  # the compute never starts
    with pytest.raises(DatabricksTimeoutError, match=r"(?s)did not finish within 33 s.*last state PENDING: Waiting "
                                                     r"for cluster.*RLM_DATABRICKS_JOB_STARTUP_S.*Run page: http"):
        await run_code(runner, "print(1)\n", timeout_s=1.0)
    assert ("POST", "/api/2.2/jobs/runs/cancel") in fake.requests
    (run,) = fake.jobs.runs.values()
    assert (run.ending.code, run.ending.result_state) == ("USER_CANCELED", "CANCELED")
    assert clock[0] >= 33.0
