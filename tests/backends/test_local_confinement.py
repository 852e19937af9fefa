"""The local Job_B confined by the kernel, end to end through LocalJobRunner: what a blocked attempt looks like
in the block's result, that the session goes on, that llm_query still reaches the bridge, and how a machine
that cannot confine is said (once) or refused (required)."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from reference_agent.backends import confinement as host_confinement
from reference_agent.backends.confinement import ConfinementPolicy, ConfinementUnavailable
from reference_agent.backends.jobs import JobRequest, LocalJobRunner
from reference_agent.backends.volume import LocalVolumeStore
from reference_agent.backends.warm import WARM_SUPPORTED
from reference_agent.config import AgentSettings
from reference_agent.executor.confine import support_report
from reference_agent.wiring import confinement_policy

SUPPORT = support_report()
FULLY_CONFINED = not SUPPORT.get("unavailable")
needs_confinement = pytest.mark.skipif(not FULLY_CONFINED, reason=f"this machine cannot confine: {SUPPORT}")
MODES = [pytest.param(True, id="warm", marks=pytest.mark.skipif(not WARM_SUPPORTED, reason="Linux only")),
         pytest.param(False, id="one-shot")]


async def _pong(prompt: str) -> str:
    return f"pong: {prompt}"


class Blocks:
    """One session's blocks through one runner: run(code) -> the result JSON."""

    def __init__(self, volume: LocalVolumeStore, runner: LocalJobRunner) -> None:
        self.volume, self.runner, self.iteration = volume, runner, 0

    async def run(self, code: str) -> dict[str, Any]:
        self.iteration += 1
        artifact = self.volume.path("artifacts", f"code_c1_{self.iteration}.py")
        self.volume.write_text(artifact, code)
        request = JobRequest(artifact_path=artifact, run_id="c1", iteration=self.iteration, timeout_s=20.0,
                             namespace_path=self.volume.path("artifacts", "namespace_c1.pkl"))
        outcome = await self.runner.run(request, sub_lm=_pong)
        return json.loads(self.volume.read_text(outcome.result_json_path))


@pytest.fixture
def volume(tmp_path: Path) -> LocalVolumeStore:
    return LocalVolumeStore(tmp_path / "volume")


@needs_confinement
@pytest.mark.parametrize("warm", MODES)
async def test_a_write_outside_fails_the_block_with_permission_error_and_the_session_goes_on(
        volume: LocalVolumeStore, tmp_path: Path, warm: bool) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    runner = LocalJobRunner(volume, warm=warm)
    try:
        blocks = Blocks(volume, runner)
        blocked = await blocks.run(f"kept = 41\nopen({str(outside / 'x.txt')!r}, 'w').write('out')\n")
        after = await blocks.run("import os\nopen('scratch.txt', 'w').write('in the work dir')\n"
                                 "print(kept + 1, llm_query('ping'), os.path.exists('scratch.txt'))\n")
    finally:
        runner.close()
    assert blocked["status"] == "error"
    assert blocked["error"]["type"] == "PermissionError"
    assert "Permission denied" in blocked["error"]["message"]
    assert not (outside / "x.txt").exists()
    assert blocked["confinement"]["missing"] == []
    # The next block runs as after any failed block: the namespace, the bridge and the work dir are there.
    assert after["status"] == "success", after["error"]
    assert after["stdout"] == "42 pong: ping True\n"


@needs_confinement
async def test_the_warm_process_reaches_its_bridge_in_every_block_and_no_other_port(volume: LocalVolumeStore) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runner = LocalJobRunner(volume, warm=True)
    try:
        blocks = Blocks(volume, runner)
        results = [await blocks.run(f"print(llm_query('block {n}'))\n") for n in (1, 2, 3)]
        other = await blocks.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)\n")
    finally:
        runner.close()
        listener.close()
    assert [r["stdout"] for r in results] == ["pong: block 1\n", "pong: block 2\n", "pong: block 3\n"]
    assert [r["executor_process"]["mode"] for r in results] == ["warm"] * 3
    assert other["error"]["type"] == "PermissionError"


def test_required_confinement_refuses_a_machine_that_lacks_a_protection(monkeypatch, volume) -> None:
    monkeypatch.setattr(host_confinement, "support_report", lambda: {
        "available": [], "unavailable": [{"protection": "network", "reason": "TCP rules need Landlock ABI 4"}]})
    with pytest.raises(ConfinementUnavailable, match=r"network: TCP rules need Landlock ABI 4"):
        LocalJobRunner(volume, confinement=ConfinementPolicy(required=True))


def test_a_missing_protection_is_said_once_per_process(monkeypatch, caplog, volume) -> None:
    monkeypatch.setattr(host_confinement, "support_report", lambda: {
        "available": ["memory"], "unavailable": [{"protection": "processes", "reason": "running as root"}]})
    monkeypatch.setattr(host_confinement, "_reported", False)
    with caplog.at_level(logging.WARNING, logger=host_confinement.__name__):
        first = LocalJobRunner(volume)
        LocalJobRunner(volume)
    said = [r.getMessage() for r in caplog.records if "WITHOUT" in r.getMessage()]
    assert said == ["The local Job_B runs WITHOUT processes: processes: running as root"]
    assert first.confinement_status["missing"][0]["protection"] == "processes"


def test_the_limits_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("RLM_EXECUTOR_MEMORY_MB", "512")
    monkeypatch.setenv("RLM_EXECUTOR_MAX_PROCESSES", "off")
    monkeypatch.setenv("RLM_REQUIRE_CONFINEMENT", "1")
    policy = confinement_policy(AgentSettings.from_env())
    assert policy.memory_bytes == 512 * 1024 * 1024 and policy.processes is None and policy.required
    assert policy.file_bytes == 1024 * 1024 * 1024  # the default
    monkeypatch.setenv("RLM_EXECUTOR_FILE_MB", "lots")
    with pytest.raises(ValueError, match="RLM_EXECUTOR_FILE_MB='lots' is not a limit"):
        AgentSettings.from_env()


@pytest.mark.slow
@pytest.mark.parametrize("warm", MODES)
async def test_a_block_past_its_cpu_time_is_killed_and_the_result_says_why(volume: LocalVolumeStore,
                                                                          warm: bool) -> None:
    runner = LocalJobRunner(volume, warm=warm, confinement=ConfinementPolicy(cpu_seconds=1))
    try:
        blocks = Blocks(volume, runner)
        spun = await blocks.run("while True:\n    pass\n")
        after = await blocks.run("print('next block')\n")
    finally:
        runner.close()
    assert spun["status"] == "killed" and spun["written_by"] == "runner"
    assert spun["error"]["message"] == ("Job_B was killed by SIGXCPU before writing its result: it used up its "
                                        "CPU-time limit (RLIMIT_CPU, the executor's confinement)")
    assert after["status"] == "success" and after["stdout"] == "next block\n"  # a new process: a fresh budget


@needs_confinement
@pytest.mark.parametrize("warm", MODES)
async def test_the_context_is_read_only_to_the_code(volume: LocalVolumeStore, warm: bool) -> None:
    context_path = volume.path("context", "context.json")  # shared by the sessions of this volume
    volume.write_text(context_path, json.dumps({"rows": 3}))
    artifact = volume.path("artifacts", "code_ctx_1.py")
    volume.write_text(artifact, "print(context['rows'])\nimport os\n"
                                "open(os.path.join(os.path.dirname(CONTEXT_PATH), 'x.json'), 'w')\n"
                                .replace("CONTEXT_PATH", repr(str(volume.local_path(context_path)))))
    runner = LocalJobRunner(volume, warm=warm)
    try:
        outcome = await runner.run(JobRequest(artifact_path=artifact, run_id="ctx", iteration=1, timeout_s=20.0,
                                              context_path=context_path,
                                              namespace_path=volume.path("artifacts", "namespace_ctx.pkl")),
                                   sub_lm=_pong)
    finally:
        runner.close()
    result = json.loads(volume.read_text(outcome.result_json_path))
    assert result["stdout"] == "3\n"
    assert result["error"]["type"] == "PermissionError"
