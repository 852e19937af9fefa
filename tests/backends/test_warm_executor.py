"""A session's warm Job_B process: what it keeps between blocks, when it gives way to the snapshot, and that
it never outlives its use (blocks' children, idle time, the pool's cap, its runner, the host process)."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from reference_agent.backends.jobs import JobRequest, LocalJobRunner
from reference_agent.backends.volume import LocalVolumeStore
from reference_agent.backends.warm import POOL, WARM_SUPPORTED

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = [pytest.mark.line_independent,
              pytest.mark.skipif(not WARM_SUPPORTED, reason="warm Job_B processes need Linux /proc")]

REPO = Path(__file__).resolve().parents[2]


async def _no_sub_lm(prompt: str) -> str:
    raise AssertionError("these blocks make no sub-LM calls")


class Session:
    """One session's blocks through one runner: run(code) -> the result JSON."""

    def __init__(self, volume: LocalVolumeStore, runner: LocalJobRunner, run_id: str = "s1") -> None:
        self.volume, self.runner, self.run_id = volume, runner, run_id
        self.iteration = 0

    @property
    def snapshot(self) -> Path:
        local = self.volume.local_path(self.volume.path("artifacts", f"namespace_{self.run_id}.pkl"))
        assert local is not None
        return local

    async def run(self, code: str, *, timeout_s: float = 10.0, context: Any = None) -> dict[str, Any]:
        self.iteration += 1
        artifact = self.volume.path("artifacts", f"code_{self.run_id}_{self.iteration}.py")
        self.volume.write_text(artifact, code)
        context_path = None
        if context is not None:
            context_path = self.volume.path("context", f"{self.run_id}_{self.iteration}.json")
            self.volume.write_text(context_path, json.dumps(context))
        request = JobRequest(artifact_path=artifact, run_id=self.run_id, iteration=self.iteration,
                             context_path=context_path, timeout_s=timeout_s,
                             namespace_path=self.volume.path("artifacts", f"namespace_{self.run_id}.pkl"))
        outcome = await self.runner.run(request, sub_lm=_no_sub_lm)
        return json.loads(self.volume.read_text(outcome.result_json_path))


@pytest.fixture
def volume(tmp_path: Path) -> LocalVolumeStore:
    return LocalVolumeStore(tmp_path / "volume")


@pytest.fixture
def runner(volume: LocalVolumeStore):
    runner = LocalJobRunner(volume, grace_s=1.5)
    yield runner
    runner.close()


def _gone(pid: int) -> bool:
    """No such process, or only a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:].split()[0] == b"Z"


def _wait_gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return False


async def test_a_lambda_and_a_socket_live_on_in_the_warm_process(volume, runner) -> None:
    session = Session(volume, runner)
    first = await session.run("import socket\nscale = lambda x: x * 10\nconn = socket.socket()\nbase = 4\n")
    second = await session.run("print(scale(base), conn.fileno() > 0)\nFINAL(scale(base))\n")

    assert first["executor_process"] == {"mode": "warm", "blocks": 1}
    assert second["executor_process"] == {"mode": "warm", "blocks": 2}
    assert second["stdout"] == "40 True\n" and second["final_answer"] == "40"
    assert second["namespace"]["source"] == "process"
    assert second["namespace"]["restored"] == ["base", "conn", "scale", "socket"]
    # Named once, by the block that made them (as on a one-shot run), and still held after that.
    assert set(first["namespace"]["unpicklable"]) == {"scale", "conn"}
    assert second["namespace"]["unpicklable"] == {}
    assert second["namespace"]["held_in_process"] == ["conn", "scale"]
    # The snapshot keeps what it can, for a process that starts afresh.
    assert set(pickle.loads(session.snapshot.read_bytes())) == {"base", "socket"}


async def test_a_one_shot_run_has_only_the_snapshot(volume) -> None:
    session = Session(volume, LocalJobRunner(volume, warm=False))
    first = await session.run("scale = lambda x: x * 10\nbase = 4\n")
    second = await session.run("print(base, 'scale' in globals())\n")
    assert first["executor_process"] == second["executor_process"] == {"mode": "one-shot", "blocks": 1}
    assert second["stdout"] == "4 False\n"
    assert second["namespace"]["source"] == "snapshot"


async def test_reserved_names_are_restored_and_context_is_each_blocks_own(volume, runner) -> None:
    session = Session(volume, runner)
    await session.run("context = 'mine'\nFINAL = None\nllm_query = 1\nx = 5\n", context={"n": 1})
    second = await session.run("print(context)\nFINAL(x)\n", context={"n": 2})
    assert second["stdout"] == "{'n': 2}\n" and second["final_answer"] == "5"
    assert second["executor_process"]["blocks"] == 2


async def test_a_snapshot_replaced_by_someone_else_wins_over_the_memory(volume, runner) -> None:
    session = Session(volume, runner)
    await session.run("x = 1\nf = lambda: 'live'\n")
    session.snapshot.write_bytes(pickle.dumps({"x": 99}))  # e.g. a Databricks run of the same session
    second = await session.run("print(x, 'f' in globals())\n")
    assert second["stdout"] == "99 False\n"
    assert second["namespace"]["source"] == "snapshot"
    assert second["executor_process"]["blocks"] == 2  # same process, its memory set aside

    session.snapshot.unlink()  # the session's volume folder was cleaned
    third = await session.run("print('x' in globals())\n")
    assert third["stdout"] == "False\n" and third["namespace"]["source"] == "new"


async def test_a_dead_worker_is_replaced_and_the_snapshot_carries_on(volume, runner) -> None:
    session = Session(volume, runner)
    first = await session.run("import os\nx = 1\nf = lambda: 0\nprint(os.getpid())\n")
    died = await session.run("import os\nos._exit(3)\n")
    assert died["status"] == "exit" and died["exit_code"] == 3 and died["written_by"] == "runner"
    assert died["executor_process"] == {"mode": "warm", "blocks": 2}
    assert _wait_gone(int(first["stdout"]))

    after = await session.run("print(x, 'f' in globals())\n")
    assert after["stdout"] == "1 False\n"
    assert after["executor_process"] == {"mode": "warm", "blocks": 1}  # a new process
    assert after["namespace"]["source"] == "snapshot"


async def test_a_block_sent_to_a_worker_that_is_leaving_runs_once_on_a_new_one(volume, runner, tmp_path) -> None:
    # The race of an idle worker leaving just as a block is sent: the request lands in the pipe, the worker
    # goes without reading it. It never said "accepted", so the block is sent to a new worker, and runs once.
    session = Session(volume, runner)
    pid = int((await session.run("import os\nx = 1\nprint(os.getpid())\n"))["stdout"])
    os.kill(pid, signal.SIGSTOP)
    asyncio.get_running_loop().call_later(0.2, os.kill, pid, signal.SIGKILL)
    ran = Path(volume.local_path(volume.path("artifacts", "ran.txt")))  # where a confined block may write
    second = await session.run(f"open({str(ran)!r}, 'a').write('ran\\n')\nprint(x)\n")
    assert second["status"] == "success" and second["stdout"] == "1\n"
    assert second["executor_process"] == {"mode": "warm", "blocks": 1}
    assert ran.read_text() == "ran\n"


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "one-shot"])
async def test_a_timed_out_blocks_changes_are_dropped_on_both_kinds_of_run(volume, warm: bool) -> None:
    runner = LocalJobRunner(volume, grace_s=1.5, warm=warm)
    try:
        session = Session(volume, runner)
        await session.run("x = 1\n")
        timed_out = await session.run("x = 2\ny = 3\nwhile True:\n    pass\n", timeout_s=0.3)
        assert timed_out["status"] == "timeout"
        after = await session.run("print(x, 'y' in globals())\n")
    finally:
        runner.close()
    assert after["stdout"] == "1 False\n"
    assert after["executor_process"]["blocks"] == (3 if warm else 1)  # the warm process survived it


async def test_a_hard_timeout_kills_the_worker_and_the_next_block_starts_afresh(volume, runner) -> None:
    session = Session(volume, runner)
    await session.run("x = 7\n")
    stuck = await session.run("import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                              "while True:\n    time.sleep(0.05)\n", timeout_s=0.3)
    assert stuck["status"] == "timeout" and stuck["error"]["type"] == "HardTimeout"
    after = await session.run("print(x)\n")
    assert after["stdout"] == "7\n" and after["executor_process"]["blocks"] == 1


async def test_processes_a_block_started_are_killed_and_the_worker_lives_on(volume, runner) -> None:
    session = Session(volume, runner)
    first = await session.run(
        "import os, subprocess\nchild = subprocess.Popen(['sleep', '60'])\nprint(child.pid, os.getpid())\n")
    child, worker = map(int, first["stdout"].split())
    assert _wait_gone(child)
    assert not _gone(worker)
    second = await session.run("import os\nprint(os.getpid())\n")
    assert int(second["stdout"]) == worker


async def test_code_and_its_children_do_not_inherit_the_control_pipes(volume, runner, tmp_path: Path) -> None:
    # os.system keeps every inheritable fd (subprocess.run would close them anyway): a `cat` child must not
    # be able to eat the worker's next request.
    folder = Path(volume.local_path(volume.path("artifacts")))  # the block's folder: a confined block writes here
    folder.mkdir(parents=True, exist_ok=True)
    listing, lister = folder / "fds.json", folder / "list_fds.py"
    # fstat, not /proc/self/fd: a confined process's children may not read their own /proc entries.
    lister.write_text("import json, os\n"
                      "def is_open(fd):\n    try:\n        return bool(os.fstat(fd))\n    except OSError:\n        return False\n"
                      f"open_fds = [fd for fd in range(1024) if is_open(fd)]\njson.dump(open_fds, open({str(listing)!r}, 'w'))\n")
    await Session(volume, runner).run(f"import os, sys\nos.system(sys.executable + ' {lister}')\n")
    assert json.loads(listing.read_text()) == [0, 1, 2]  # stdio only


async def test_the_pool_cap_evicts_the_least_recently_used_idle_worker(volume) -> None:
    runner = LocalJobRunner(volume, max_warm=1)
    try:
        a, b = Session(volume, runner, "a"), Session(volume, runner, "b")
        a_pid = int((await a.run("import os\nx = 'a'\nprint(os.getpid())\n"))["stdout"])
        await b.run("y = 'b'\n")
        assert _wait_gone(a_pid)
        again = await a.run("print(x)\n")
        assert again["stdout"] == "a\n"
        assert again["executor_process"]["blocks"] == 1 and again["namespace"]["source"] == "snapshot"
    finally:
        runner.close()


async def test_a_second_block_of_a_busy_session_runs_one_shot(volume, runner) -> None:
    session = Session(volume, runner)
    await session.run("x = 1\n")
    other = Session(volume, runner)
    other.iteration = 100
    slow, quick = await asyncio.gather(session.run("import time\ntime.sleep(0.5)\n"), other.run("print(x)\n"))
    assert slow["executor_process"]["mode"] == "warm"
    assert quick["executor_process"]["mode"] == "one-shot" and quick["stdout"] == "1\n"


async def test_an_idle_worker_leaves_by_itself(volume) -> None:
    runner = LocalJobRunner(volume, idle_s=0.3)
    try:
        session = Session(volume, runner)
        pid = int((await session.run("import os\nx = 2\nprint(os.getpid())\n"))["stdout"])
        assert _wait_gone(pid, within_s=5)
        after = await session.run("print(x)\n")
        assert after["stdout"] == "2\n" and after["executor_process"]["blocks"] == 1
    finally:
        runner.close()


def test_a_worker_serves_a_session_across_event_loops(volume, runner) -> None:
    # The CLI and some hosts call asyncio.run per turn: the worker is not tied to a loop.
    session = Session(volume, runner)
    asyncio.run(session.run("x = 1\n"))
    second = asyncio.run(session.run("print(x)\n"))
    assert second["stdout"] == "1\n" and second["executor_process"]["blocks"] == 2


async def test_closing_the_runner_stops_its_workers_and_removes_their_folders(volume) -> None:
    runner = LocalJobRunner(volume)
    result = await Session(volume, runner).run("import os\nprint(os.getpid(), os.getcwd())\n")
    pid, cwd = result["stdout"].split()
    runner.close()
    assert _wait_gone(int(pid))
    assert not Path(cwd).exists()
    volume_root = str(volume.local_path(volume.path("artifacts", "x")).parent)
    assert not [key for key in POOL._workers if volume_root in key]


def test_a_worker_exits_when_its_host_dies_however_it_dies(tmp_path: Path) -> None:
    host = textwrap.dedent(f"""
        import asyncio, json, os, sys
        sys.path.insert(0, {str(REPO)!r})
        from reference_agent.backends.jobs import JobRequest, LocalJobRunner
        from reference_agent.backends.volume import LocalVolumeStore

        async def main():
            volume = LocalVolumeStore({str(tmp_path / "volume")!r})
            artifact = volume.path("artifacts", "code.py")
            volume.write_text(artifact, "import os\\nprint(os.getpid())\\n")
            request = JobRequest(artifact_path=artifact, run_id="s", iteration=1,
                                 namespace_path=volume.path("artifacts", "namespace_s.pkl"))
            outcome = await LocalJobRunner(volume).run(request, sub_lm=None)
            print(json.loads(volume.read_text(outcome.result_json_path))["stdout"], flush=True)
            os.kill(os.getpid(), 9)  # no atexit, no close: only the pipe's EOF tells the worker

        asyncio.run(main())
    """)
    host_tmp = tmp_path / "host-tmp"  # what the killed host cannot remove (its fork server's, its worker's folder)
    host_tmp.mkdir()
    proc = subprocess.run([sys.executable, "-c", host], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(host_tmp)})
    assert proc.returncode == -9, proc.stderr
    assert _wait_gone(int(proc.stdout.strip()), within_s=10)


# --- the fork server (reference_agent/backends/forkserver.py): workers forked, not started afresh -----------------

_PROBE = ("import json, os, sys\n"
          "print(json.dumps({'ppid': os.getppid(), 'own_group': os.getpgid(0) == os.getsid(0) == os.getpid(),"
          " 'argv0': sys.argv[0], 'main': sys.modules['__main__'].__file__, 'path0': sys.path[0], 'cwd': os.getcwd(),"
          " 'home': os.environ['HOME'], 'stdin': os.readlink('/proc/self/fd/0'), 'path': sys.path[1:],"
          " 'env': sorted(os.environ), 'flags': [sys.flags.no_user_site, sys.flags.hash_randomization]}))\n")


async def _probe(volume: LocalVolumeStore, run_id: str) -> dict[str, Any]:
    runner = LocalJobRunner(volume)
    try:
        result = await Session(volume, runner, run_id).run(_PROBE)
        assert result["executor_process"]["mode"] == "warm", result
        return json.loads(result["stdout"])
    finally:
        runner.close()


async def test_a_forked_worker_is_what_a_fresh_start_gives_but_its_parent(volume, monkeypatch) -> None:
    from reference_agent.backends import forkserver

    forked, again = await _probe(volume, "a"), await _probe(volume, "b")
    monkeypatch.setattr(forkserver, "SUPPORTED", False)
    fresh = await _probe(volume, "c")

    assert fresh["ppid"] == os.getpid()  # started afresh by this process
    assert forked["ppid"] == again["ppid"] != os.getpid()  # both forked by the one server
    for probe in (forked, fresh):
        assert probe.pop("cwd") == probe.pop("path0") == probe.pop("home"), probe
        del probe["ppid"]
    assert forked == fresh
    assert fresh["own_group"] and fresh["stdin"] == "/dev/null" and fresh["main"].endswith("executor/worker.py")


async def test_a_site_folders_sitecustomize_runs_once_and_its_fork_hook_in_each_worker(volume, monkeypatch,
                                                                                      tmp_path: Path) -> None:
    # The harness's clock: its sitecustomize reads clock.json at start and again in a forked child, so a worker
    # forked later reads a later instant from the same server.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import builtins, os
        def read():
            builtins.SITE_VALUE = open({str(site / 'value.txt')!r}).read()
        builtins.SITE_STARTS = getattr(builtins, "SITE_STARTS", 0) + 1
        read()
        os.register_at_fork(after_in_child=read)
    """))
    monkeypatch.setenv("RLM_EXECUTOR_SITE", str(site))
    seen = []
    for value in ("one", "two"):
        (site / "value.txt").write_text(value)
        runner = LocalJobRunner(volume)
        try:
            result = await Session(volume, runner, f"s-{value}").run(
                "import os\nprint(SITE_VALUE, SITE_STARTS, os.getppid())\n")
        finally:
            runner.close()
        seen.append(result["stdout"].split())
    assert [value for value, _, _ in seen] == ["one", "two"]
    assert seen[0][1:] == seen[1][1:] and seen[0][1] == "1" and seen[0][2] != str(os.getpid())  # one server, once


async def test_a_fork_server_that_dies_takes_its_workers_and_the_session_carries_on(volume, runner) -> None:
    session = Session(volume, runner)
    worker, server = map(int, (await session.run("import os\nx = 1\nprint(os.getpid(), os.getppid())\n"))["stdout"]
                         .split())
    from reference_agent.backends import forkserver

    folder = next(Path(s.folder) for s in forkserver._servers.values() if s.proc.pid == server)
    os.kill(server, signal.SIGKILL)
    assert _wait_gone(worker)  # killed with its server, not left orphaned
    after = await session.run("import os\nprint(x, os.getppid())\n")
    value, new_server = after["stdout"].split()
    assert value == "1" and after["namespace"]["source"] == "snapshot"
    assert int(new_server) not in (server, os.getpid())  # a new server
    assert not folder.exists()  # the dead server's folder went when the new one took its place


def test_an_interpreter_that_cannot_serve_is_not_asked_again(tmp_path: Path, monkeypatch) -> None:
    # Say a Job_B interpreter whose reference_agent predates the fork server: its server dies at start; its workers
    # start afresh, without a new server tried (and a process start paid) for each.
    from reference_agent.backends import forkserver
    from reference_agent.backends.process import scrubbed_env

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    started = []
    real = forkserver.ForkServer
    monkeypatch.setattr(forkserver, "ForkServer", lambda *a: started.append(a) or real(*a))
    env = scrubbed_env(str(tmp_path))
    for _ in range(2):
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        try:
            assert forkserver.start_worker(str(python), [], cwd=str(tmp_path), env=env, request_r=request_r,
                                           reply_w=reply_w) is None
        finally:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
    assert len(started) == 1
