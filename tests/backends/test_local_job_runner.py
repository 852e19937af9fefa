"""LocalJobRunner: Job_B as a subprocess, the LM bridge, and the results it writes when Job_B cannot.

Tests that take ``job_mode`` run twice: a one-shot process, and a session's warm process (a request with a
namespace snapshot). Both must leave the same result; what only the warm process does is in test_warm_executor.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from reference_agent.backends.jobs import JobOutcome, JobRequest, JobRunner, LocalJobRunner
from reference_agent.backends.sublm import sublm_from_genai
from reference_agent.backends.volume import LocalVolumeStore

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


class FakeSubLm:
    """Answers after ``delay`` seconds and records when each prompt started and ended."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.delay = delay
        self.fail_on = fail_on
        self.spans: list[tuple[str, float, float]] = []

    async def __call__(self, prompt: str) -> str:
        start = time.perf_counter()
        await asyncio.sleep(self.delay)
        self.spans.append((prompt, start, time.perf_counter()))
        if self.fail_on is not None and self.fail_on in prompt:
            raise ValueError(f"model refused {prompt!r}")
        return f"answer:{prompt}"


@pytest.fixture
def volume(tmp_path: Path) -> LocalVolumeStore:
    return LocalVolumeStore(tmp_path / "volume")


@pytest.fixture(params=["one-shot", "warm"])
def job_mode(request: pytest.FixtureRequest) -> str:
    return request.param


async def run_code(
    volume: LocalVolumeStore,
    code: str,
    sub_lm: Any = None,
    *,
    iteration: int = 1,
    context: Any = None,
    timeout_s: float = 10.0,
    grace_s: float = 5.0,
    output_cap_bytes: int = 100_000,
    max_sublm_calls: int = 16,
    mode: str = "one-shot",
) -> tuple[JobOutcome, dict[str, Any]]:
    artifact = volume.path("artifacts", f"agent_code_run1_iter{iteration}.py")
    volume.write_text(artifact, code)
    context_path = None
    if context is not None:
        context_path = volume.path("context", "data.json")
        volume.write_text(context_path, json.dumps(context))
    runner = LocalJobRunner(volume, grace_s=grace_s)
    assert isinstance(runner, JobRunner)
    request = JobRequest(
        artifact_path=artifact,
        run_id="run1",
        iteration=iteration,
        context_path=context_path,
        timeout_s=timeout_s,
        output_cap_bytes=output_cap_bytes,
        max_sublm_calls=max_sublm_calls,
        # A session's REPL snapshot: what sends the request to the session's warm process.
        namespace_path=volume.path("artifacts", "namespace_run1.pkl") if mode == "warm" else None,
    )
    try:
        outcome = await runner.run(request, sub_lm=sub_lm or FakeSubLm())
    finally:
        runner.close()
    assert outcome.result_json_path == volume.path("artifacts", f"result_run1_iter{iteration}.json")
    result = json.loads(volume.read_text(outcome.result_json_path))
    assert result["executor_process"] == {"mode": mode, "blocks": 1}
    return outcome, result


async def test_success_with_context(volume: LocalVolumeStore, job_mode: str) -> None:
    outcome, result = await run_code(volume, "print(context['q'])\nFINAL(context['q'].upper())\n", context={"q": "hi"}, mode=job_mode)
    assert outcome.runner_state == "SUCCESS" and outcome.run_url is None
    assert result["status"] == "success" and result["stdout"] == "hi\n"
    assert result["final_answer"] == "HI" and result["written_by"] == "executor"


async def test_llm_query_and_batched_calls_go_through_the_bridge_concurrently(volume: LocalVolumeStore, job_mode: str) -> None:
    sub_lm = FakeSubLm(delay=0.3)
    code = "one = llm_query('single')\nmany = llm_query_batched([f'p{i}' for i in range(5)])\nprint(one)\nprint(many)\n"
    _, result = await run_code(volume, code, sub_lm, mode=job_mode)
    assert result["status"] == "success", result["error"]
    assert result["stdout"] == "answer:single\n" + str([f"answer:p{i}" for i in range(5)]) + "\n"

    batch = [span for span in sub_lm.spans if span[0] != "single"]
    assert len(batch) == 5
    # Concurrency observed, not inferred from wall time: every prompt started before any finished.
    assert max(start for _, start, _ in batch) < min(end for _, _, end in batch)

    calls = result["sublm_calls"]
    assert [c["batched"] for c in calls] == [False] + [True] * 5
    assert [c["batch_size"] for c in calls] == [1] + [5] * 5
    assert [c["index"] for c in calls] == list(range(6))
    assert all(c["error"] is None for c in calls)
    assert calls[0]["prompt_chars"] == len("single") and calls[0]["response_chars"] == len("answer:single")
    assert calls[1]["latency_s"] < 2 * 0.3  # one batch costs about one call, not five


async def test_llm_query_failure_surfaces_as_an_error(volume: LocalVolumeStore, job_mode: str) -> None:
    code = "print('before')\nllm_query_batched(['ok', 'bad one'])\nprint('after')\n"
    _, result = await run_code(volume, code, FakeSubLm(fail_on="bad"), mode=job_mode)
    assert result["status"] == "error"
    assert result["stdout"] == "before\n"
    assert result["error"]["type"] == "SubLmError"
    assert "prompt 2 of 2 failed: ValueError" in result["error"]["message"]
    assert all(c["error"] for c in result["sublm_calls"])


async def test_sublm_budget_exceeded(volume: LocalVolumeStore, job_mode: str) -> None:
    code = "llm_query('a')\nllm_query_batched(['b', 'c'])\nllm_query('d')\n"
    _, result = await run_code(volume, code, max_sublm_calls=3, mode=job_mode)
    assert result["status"] == "error"
    assert result["error"]["type"] == "SubLmBudgetExceeded"
    assert "at most 3" in result["error"]["message"]
    assert len(result["sublm_calls"]) == 3


async def test_bridge_enforces_the_budget_even_when_code_bypasses_the_client(volume: LocalVolumeStore, job_mode: str) -> None:
    code = (
        "import json, socket, sys\n"
        "host, port = sys.argv[sys.argv.index('--lm-address') + 1].split(':')\n"
        "s = socket.create_connection((host, int(port)))\n"
        "s.sendall(json.dumps({'id': 1, 'prompts': ['x'] * 5}).encode() + b'\\n')\n"
        "print(s.makefile().readline())\n"
    )
    _, result = await run_code(volume, code, max_sublm_calls=2, mode=job_mode)
    assert "budget exceeded" in json.loads(result["stdout"])["error"]


async def test_environment_is_scrubbed(volume: LocalVolumeStore, job_mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key")
    monkeypatch.setenv("DATABRICKS_TOKEN", "fake-databricks-token")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "fake-project")
    code = "import json, os\nprint(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))\n"
    _, result = await run_code(volume, code, mode=job_mode)
    seen = json.loads(result["stdout"])
    env = seen["env"]
    assert "fake-gemini-key" not in result["stdout"] and "fake-databricks-token" not in result["stdout"]
    assert set(env) <= {"PATH", "HOME", "LANG", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING"}
    assert env["HOME"] == seen["cwd"]
    assert Path(seen["cwd"]).name.startswith("rlm-jobb-")
    assert not Path(seen["cwd"]).exists()  # the private working directory is removed afterwards


async def test_os_exit_gets_a_runner_written_result(volume: LocalVolumeStore, job_mode: str) -> None:
    stale = volume.path("artifacts", "result_run1_iter1.json")
    volume.write_text(stale, json.dumps({"status": "success", "stdout": "stale"}))
    code = "import os, sys\nsys.__stderr__.write('dying\\n'); sys.__stderr__.flush()\nos._exit(1)\n"
    outcome, result = await run_code(volume, code, mode=job_mode)
    assert outcome.runner_state == "FAILED"
    assert result["written_by"] == "runner"
    assert result["status"] == "exit" and result["exit_code"] == 1
    assert result["stderr"] == "dying\n"
    assert result["has_final_call"] is False


async def test_killed_by_a_signal(volume: LocalVolumeStore, job_mode: str) -> None:
    code = "import os\nos.kill(os.getpid(), 9)\n"
    outcome, result = await run_code(volume, code, mode=job_mode)
    assert outcome.runner_state == "FAILED"
    assert result["status"] == "killed"
    assert result["signal"] == 9 and result["exit_code"] == -9
    assert "SIGKILL" in result["error"]["message"]


async def test_hard_timeout_kills_code_that_disarms_the_soft_one(volume: LocalVolumeStore, job_mode: str) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)\n"
    started = time.perf_counter()
    outcome, result = await run_code(volume, code, timeout_s=0.3, grace_s=1.2, mode=job_mode)
    assert time.perf_counter() - started < 5
    assert outcome.runner_state == "TIMEDOUT"
    assert result["status"] == "timeout" and result["written_by"] == "runner"
    assert result["error"]["type"] == "HardTimeout"


async def test_soft_timeout_keeps_partial_output(volume: LocalVolumeStore, job_mode: str) -> None:
    outcome, result = await run_code(volume, "print('partial')\nwhile True:\n    pass\n", timeout_s=0.4, mode=job_mode)
    assert outcome.runner_state == "SUCCESS"
    assert result["status"] == "timeout" and result["stdout"] == "partial\n"


async def test_ten_megabytes_on_the_raw_pipes_are_drained_with_caps(volume: LocalVolumeStore, job_mode: str) -> None:
    # Straight to fd 1 and 2, past the in-process capture: only the runner's drain sees it.
    code = "import os\nblock = b'y' * 1_000_000\nfor _ in range(10):\n    os.write(1, block)\n    os.write(2, block)\nos._exit(4)\n"
    _, result = await run_code(volume, code, output_cap_bytes=2048, mode=job_mode)
    assert result["status"] == "exit" and result["exit_code"] == 4
    for stream in ("stdout", "stderr"):
        assert result[f"{stream}_bytes"] == 10_000_000
        assert result[f"{stream}_truncated"] is True
        assert result[stream] == "y" * 2048


async def test_sublm_from_genai_uses_the_async_client() -> None:
    class _Response:
        def __init__(self, text: str | None) -> None:
            self.text = text

    class _Models:
        def __init__(self) -> None:
            self.calls: list[dict[str, Any]] = []

        async def generate_content(self, *, model: str, contents: str) -> _Response:
            self.calls.append({"model": model, "contents": contents})
            return _Response(None if contents == "empty" else f"re:{contents}")

    class _Client:
        def __init__(self) -> None:
            self.aio = type("Aio", (), {})()
            self.aio.models = _Models()

    client = _Client()
    sub_lm = sublm_from_genai(client, "gemini-test")
    assert await sub_lm("hello") == "re:hello"
    assert await sub_lm("empty") == ""
    assert client.aio.models.calls == [
        {"model": "gemini-test", "contents": "hello"},
        {"model": "gemini-test", "contents": "empty"},
    ]


def test_grace_must_exceed_the_executor_grace(volume: LocalVolumeStore) -> None:
    with pytest.raises(ValueError):
        LocalJobRunner(volume, grace_s=0.5)


# --- one delegation, one execution (backends/idempotency.py) ---------------------------------------------------


def counting_delegation(volume: LocalVolumeStore, *, delegation_id: str | None, mode: str) -> tuple[JobRequest, Path]:
    """A delegation whose code appends a line to a counter file next to it: one line per execution."""
    artifact = volume.path("artifacts", "agent_code_run1_iter1_a1b2c3.py")
    counter = volume.local_path(volume.path("artifacts", "executions.txt"))
    volume.write_text(artifact, f"with open({str(counter)!r}, 'a') as f:\n    f.write('ran\\n')\nprint('done')\n")
    return JobRequest(artifact_path=artifact, run_id="run1", iteration=1, timeout_s=10.0, delegation_id=delegation_id,
                      namespace_path=volume.path("artifacts", "namespace_run1.pkl") if mode == "warm" else None), counter


async def test_a_retried_delegation_adopts_its_result_and_does_not_run_again(volume: LocalVolumeStore,
                                                                              job_mode: str) -> None:
    request, counter = counting_delegation(volume, delegation_id="a1b2c3", mode=job_mode)
    runner = LocalJobRunner(volume)
    try:
        first = await runner.run(request, sub_lm=FakeSubLm())
    finally:
        runner.close()
    retry = LocalJobRunner(volume)  # the recovered process: a new runner, no memory of the first
    try:
        again = await retry.run(request, sub_lm=FakeSubLm())
    finally:
        retry.close()
    assert counter.read_text() == "ran\n", "the retry executed the delegation's code a second time"
    assert again.result_json_path == first.result_json_path and again.runner_state == "SUCCESS"
    assert "adopted" in again.message
    assert json.loads(volume.read_text(again.result_json_path))["stdout"] == "done\n"


async def test_without_a_delegation_id_a_second_run_executes_again(volume: LocalVolumeStore) -> None:
    request, counter = counting_delegation(volume, delegation_id=None, mode="one-shot")
    for _ in range(2):
        await LocalJobRunner(volume).run(request, sub_lm=FakeSubLm())
    assert counter.read_text() == "ran\nran\n"


async def test_an_earlier_result_of_another_artifact_at_the_path_is_not_adopted(volume: LocalVolumeStore) -> None:
    request, counter = counting_delegation(volume, delegation_id="a1b2c3", mode="one-shot")
    stale = volume.local_path(volume.path("artifacts", "result_run1_iter1.json"))
    stale.write_text(json.dumps({"status": "success", "artifact_path": "agent_code_run1_iter1_ffffff.py"}))
    await LocalJobRunner(volume).run(request, sub_lm=FakeSubLm())
    assert counter.read_text() == "ran\n"


_AGENT = """
import asyncio, sys
from pathlib import Path
from reference_agent.backends.jobs import JobRequest, LocalJobRunner
from reference_agent.backends.volume import LocalVolumeStore

async def no_sub_lm(prompt):
    raise AssertionError(prompt)

volume = LocalVolumeStore(Path(sys.argv[1]))
request = JobRequest(artifact_path=volume.path("artifacts", "agent_code_run1_iter1_a1b2c3.py"), run_id="run1",
                     iteration=1, timeout_s=20.0, delegation_id="a1b2c3")
asyncio.run(LocalJobRunner(volume, warm=False).run(request, sub_lm=no_sub_lm))
"""


async def test_a_retry_while_the_dead_agents_job_b_still_runs_waits_for_it_and_adopts_its_result(
        volume: LocalVolumeStore) -> None:
    """The agent is SIGKILLed while Job_B runs (Job_B, in its own process group, goes on); the retry finds the
    claim of a live group, waits for the result and adopts it: the code ran once."""
    import signal
    import subprocess
    import sys

    request, counter = counting_delegation(volume, delegation_id="a1b2c3", mode="one-shot")
    code = volume.read_text(request.artifact_path)
    started = counter.with_name("started.txt")
    volume.write_text(request.artifact_path,
                      f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(2)\n" + code)
    agent = subprocess.Popen([sys.executable, "-c", _AGENT, str(volume.root)])
    claim = volume.local_path(volume.path("artifacts", "result_run1_iter1.json.claim"))
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:  # killed while the code runs, not before
        await asyncio.sleep(0.05)
    assert claim.exists() and started.exists(), "the runner wrote no claim, or Job_B never started the code"
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    assert not counter.exists(), "Job_B finished before the agent was killed: the test proves nothing"

    outcome = await LocalJobRunner(volume, warm=False).run(request, sub_lm=FakeSubLm())
    # The orphan mostly outlives its agent and its result is adopted; sometimes it dies too (its process group
    # loses its output pipes with the agent) before the side effect, and then the retry's run is the only one.
    assert counter.read_text() == "ran\n", ("the code ran twice", outcome)
    assert "adopted" in outcome.message or outcome.message.startswith("Job_B finished"), outcome
