"""The child-side confinement (reference_agent/executor/confine.py): each protection blocks in a real child.

Every blocking test runs the same code twice in a fresh ``python -c`` child, once confined and once
not, so the block is shown to come from the confinement and not from the machine.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reference_agent.executor import confine, landlock

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

REPO = Path(__file__).resolve().parents[2]
ABI = landlock.abi_version()
ROOT = sys.platform.startswith("linux") and os.geteuid() == 0

needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"the kernel has no Landlock (ABI {ABI})")
needs_tcp_rules = pytest.mark.skipif(ABI < 4, reason=f"Landlock TCP rules need ABI 4 (Linux 6.7+); ABI {ABI}")
needs_scopes = pytest.mark.skipif(ABI < 6, reason=f"Landlock scopes need ABI 6 (Linux 6.12+); ABI {ABI}")
needs_rlimits = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux rlimit semantics")

# The child: confine as argv[1] says (or not: "null"), run attempt() and print what happened as JSON.
CHILD = '''
import json, sys
from reference_agent.executor import confine
{setup}
spec = json.loads(sys.argv[1])
report = None
def attempt():
{body}
try:
    report = confine.apply_confinement(spec) if spec is not None else None
    out = {{"ok": True, "value": attempt()}}
except BaseException as exc:
    out = {{"ok": False, "type": type(exc).__name__, "errno": getattr(exc, "errno", None), "message": str(exc)}}
out["report"] = report
print(json.dumps(out))
'''


def spec(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    writable = tmp_path / "w"
    writable.mkdir(exist_ok=True)
    base: dict[str, Any] = {"read": [], "write": [str(writable)], "connect_ports": [],
                            "limits": {}, "cgroup": None, "required": False}
    base.update(changes)
    return base


def child(body: str, spec_: dict[str, Any] | None, *, prelude: str = "", setup: str = "",
          timeout: float = 30) -> dict[str, Any]:
    """``prelude`` runs first; ``setup`` after the child's imports, before it confines itself."""
    code = prelude + CHILD.format(body=textwrap.indent(textwrap.dedent(body), "    "), setup=setup)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec_)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def both(body: str, spec_: dict[str, Any], **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(confined, unconfined) outcomes of the same code."""
    return child(body, spec_, **kw), child(body, None, **kw)


def blocked(outcome: dict[str, Any], exc_type: str, err: int | None = None) -> None:
    assert not outcome["ok"], outcome
    assert outcome["type"] == exc_type, outcome
    if err is not None:
        assert outcome["errno"] == err, outcome


# --- filesystem ------------------------------------------------------------------------------------

@needs_landlock
def test_writes_outside_the_write_paths_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    body = f"""
    open({str(tmp_path / 'w' / 'inside.txt')!r}, "w").write("fine")
    open({str(outside)!r}, "w").write("escaped")
    """
    confined, free = both(body, spec(tmp_path))
    blocked(confined, "PermissionError", errno.EACCES)
    assert (tmp_path / "w" / "inside.txt").read_text() == "fine"
    assert free["ok"] and outside.read_text() == "escaped"
    assert {"filesystem_write", "filesystem_read"} <= set(confined["report"]["applied"])


@needs_landlock
def test_reads_outside_the_read_paths_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "table.csv").write_text("a,b\n")
    (tmp_path / "secret.txt").write_text("token")
    body = f"""
    assert open({str(data / 'table.csv')!r}).read() == "a,b\\n"
    return open({str(tmp_path / 'secret.txt')!r}).read()
    """
    confined, free = both(body, spec(tmp_path, read=[str(data)]))
    blocked(confined, "PermissionError", errno.EACCES)
    assert free == {"ok": True, "value": "token", "report": None}


@needs_landlock
def test_a_read_path_that_is_a_file_or_missing_is_fine(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("1")
    (tmp_path / "two.txt").write_text("2")
    body = f"""
    assert open({str(tmp_path / 'one.txt')!r}).read() == "1"
    return open({str(tmp_path / 'two.txt')!r}).read()
    """
    confined = child(body, spec(tmp_path, read=[str(tmp_path / "one.txt"), str(tmp_path / "nope")],
                               write=[str(tmp_path / "w" / "file.txt")]))
    blocked(confined, "PermissionError", errno.EACCES)


@needs_landlock
def test_own_proc_entry_is_readable_but_not_the_parents_environment(tmp_path: Path) -> None:
    body = """
    import os
    assert "Name:" in open("/proc/self/status").read()
    assert open(f"/proc/{os.getpid()}/cmdline", "rb").read()
    return open(f"/proc/{os.getppid()}/environ", "rb").read().decode(errors="replace")[:20]
    """
    confined, free = both(body, spec(tmp_path))
    blocked(confined, "PermissionError", errno.EACCES)
    assert free["ok"] and free["value"]


# --- network ---------------------------------------------------------------------------------------

@pytest.fixture
def listeners() -> Any:
    socks = []
    for _ in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        socks.append(sock)
    yield [s.getsockname()[1] for s in socks]
    for sock in socks:
        sock.close()


@needs_tcp_rules
def test_tcp_connect_only_to_the_allowed_ports(tmp_path: Path, listeners: list[int]) -> None:
    allowed, other = listeners
    body = f"""
    import socket
    socket.create_connection(("127.0.0.1", {allowed}), timeout=5).close()
    socket.create_connection(("127.0.0.1", {other}), timeout=5).close()
    """
    confined, free = both(body, spec(tmp_path, connect_ports=[allowed]))
    blocked(confined, "PermissionError", errno.EACCES)
    assert free["ok"], free
    assert "network" in confined["report"]["applied"]


@needs_tcp_rules
def test_tcp_bind_is_refused(tmp_path: Path) -> None:
    body = """
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
    """
    confined, free = both(body, spec(tmp_path))
    blocked(confined, "PermissionError", errno.EACCES)
    assert free["ok"], free


@needs_scopes
def test_signals_to_processes_outside_the_sandbox_are_refused(tmp_path: Path) -> None:
    body = """
    import os
    os.kill(os.getpid(), 0)
    os.kill(os.getppid(), 0)
    """
    confined, free = both(body, spec(tmp_path))
    blocked(confined, "PermissionError", errno.EPERM)
    assert free["ok"], free
    assert "signals_scoped" in confined["report"]["extra"]


# --- rlimits ---------------------------------------------------------------------------------------

LIMIT = 256 * 1024 * 1024


@needs_rlimits
def test_memory_past_the_limit_raises_memory_error(tmp_path: Path) -> None:
    body = f"""
    assert len(bytes({LIMIT // 8})) == {LIMIT // 8}
    return len(bytes({2 * LIMIT}))  # calloc: no page is touched, only the address space counts
    """
    confined, free = both(body, spec(tmp_path, limits={"memory_bytes": LIMIT}))
    blocked(confined, "MemoryError")
    assert free["ok"] and free["value"] == 2 * LIMIT
    assert "memory" in confined["report"]["applied"]


@needs_rlimits
def test_a_file_past_the_size_limit_raises_efbig(tmp_path: Path) -> None:
    target = tmp_path / "w" / "big.bin"
    body = f"""
    with open({str(target)!r}, "wb") as handle:
        handle.write(b"x" * 1000)
        handle.seek(2 * 1024 * 1024)
        handle.write(b"x")
    """
    confined, free = both(body, spec(tmp_path, limits={"file_bytes": 1024 * 1024}))
    blocked(confined, "OSError", errno.EFBIG)  # Python ignores SIGXFSZ, so the write fails instead of killing
    assert free["ok"], free


@needs_rlimits
def test_limits_cannot_be_raised_again(tmp_path: Path) -> None:
    body = """
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    assert soft == hard, (soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    """
    confined = child(body, spec(tmp_path, limits={"memory_bytes": 1 << 30}))
    blocked(confined, "ValueError")


@pytest.mark.skipif(not ROOT, reason="capabilities are dropped only when the child runs as root")
def test_root_child_drops_every_capability(tmp_path: Path) -> None:
    body = """
    caps = dict(line.split(":", 1) for line in open("/proc/self/status") if line.startswith("Cap"))
    return {k: int(v, 16) for k, v in caps.items()}
    """
    confined, free = both(body, spec(tmp_path))
    assert confined["value"]["CapEff"] == confined["value"]["CapBnd"] == confined["value"]["CapPrm"] == 0
    assert free["value"]["CapEff"] != 0
    assert "capabilities_dropped" in confined["report"]["extra"]


@needs_rlimits
def test_cpu_time_past_the_limit_kills_with_sigxcpu(tmp_path: Path) -> None:
    body = """
    import time
    while time.process_time() < 1.6:
        pass
    return "done"
    """
    code = CHILD.format(body=textwrap.indent(textwrap.dedent(body), "    "), setup="")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    limited = subprocess.run([sys.executable, "-c", code, json.dumps(spec(tmp_path, limits={"cpu_seconds": 1}))],
                             capture_output=True, env=env, timeout=30)
    assert limited.returncode == -signal.SIGXCPU, limited
    assert child(body, None)["value"] == "done"


FORKS = """
import os, time
read_end, write_end = os.pipe()
children, refused = [], None
for _ in range(50):
    try:
        pid = os.fork()
    except BlockingIOError as exc:
        refused = exc.errno
        break
    if pid == 0:
        os.close(write_end)
        os.read(read_end, 1)  # alive until the parent closes the pipe
        os._exit(0)
    children.append(pid)
os.close(write_end)
for pid in children:
    os.waitpid(pid, 0)
return {"forked": len(children), "refused": refused}
"""


@pytest.mark.skipif(not ROOT, reason="the pids cgroup needs root")
def test_processes_capped_by_the_pids_cgroup(tmp_path: Path) -> None:
    cgroup = confine.create_pids_cgroup(8)
    if cgroup is None:
        pytest.skip("no writable pids cgroup hierarchy")
    try:
        confined, free = both(FORKS, spec(tmp_path, cgroup=cgroup, limits={"processes": 8}))
    finally:
        confine.remove_cgroup(cgroup)
    assert not os.path.exists(cgroup)
    assert confined["ok"], confined
    assert confined["value"]["refused"] == errno.EAGAIN and confined["value"]["forked"] <= 7, confined
    assert free["value"] == {"forked": 50, "refused": None}
    assert "processes" in confined["report"]["applied"]


@pytest.mark.skipif(ROOT or not sys.platform.startswith("linux"), reason="RLIMIT_NPROC binds only non-root")
def test_processes_capped_by_rlimit_nproc_when_not_root(tmp_path: Path) -> None:
    confined, free = both(FORKS, spec(tmp_path, limits={"processes": 8}))
    assert confined["value"]["refused"] == errno.EAGAIN and confined["value"]["forked"] <= 8, confined
    assert free["value"] == {"forked": 50, "refused": None}


@pytest.mark.skipif(not ROOT, reason="as root without a cgroup")
def test_root_without_a_cgroup_reports_the_process_cap_missing(tmp_path: Path) -> None:
    report = child("return None", spec(tmp_path, limits={"processes": 8}))["report"]
    assert "processes" not in report["applied"]
    reason = {m["protection"]: m["reason"] for m in report["missing"]}["processes"]
    assert "root" in reason and "RLIMIT_NPROC" in reason and "no pids cgroup" in reason


def test_remove_cgroup_never_raises(tmp_path: Path) -> None:
    confine.remove_cgroup(str(tmp_path / "no-such-cgroup"))
    (tmp_path / "plain-dir").mkdir()
    confine.remove_cgroup(str(tmp_path / "plain-dir"))
    assert not (tmp_path / "plain-dir").exists()


# --- required, and machines without it -----------------------------------------------------------

FAKE_ABI_0 = "from reference_agent.executor import landlock\nlandlock.abi_version = lambda: 0\n"
FAKE_MACOS = "import sys\nsys.platform = 'darwin'\n"


def test_required_without_landlock_raises_naming_what_is_missing(tmp_path: Path) -> None:
    out = child("return None", spec(tmp_path, required=True), prelude=FAKE_ABI_0)
    blocked(out, "ConfinementUnavailable")
    for protection in ("filesystem_write", "filesystem_read", "network"):
        assert protection in out["message"]
    assert "kernel ABI 0" in out["message"] and "Linux 5.13" in out["message"]
    assert "drop the requirement: unset RLM_REQUIRE_CONFINEMENT" in out["message"]


def test_best_effort_without_landlock_reports_instead_of_raising(tmp_path: Path) -> None:
    out = child("return None", spec(tmp_path, limits={"file_bytes": 10_000}), prelude=FAKE_ABI_0)
    assert out["ok"]
    missing = {m["protection"]: m["reason"] for m in out["report"]["missing"]}
    assert set(missing) == {"filesystem_write", "filesystem_read", "network"}
    assert "file_size" in out["report"]["applied"]


def test_not_linux_applies_the_rlimits_and_names_the_rest(tmp_path: Path) -> None:
    out = child("import resource\nreturn resource.getrlimit(resource.RLIMIT_FSIZE)",
                spec(tmp_path, limits={"file_bytes": 10_000}), prelude=FAKE_MACOS)
    assert out["ok"] and out["value"] == [10_000, 10_000]
    missing = {m["protection"]: m["reason"] for m in out["report"]["missing"]}
    assert set(missing) == {"filesystem_write", "filesystem_read", "network"}
    assert all("not Linux" in reason for reason in missing.values())


def test_required_and_everything_available_does_not_raise(tmp_path: Path) -> None:
    if confine.support_report()["unavailable"]:
        pytest.skip(f"this machine lacks some: {confine.support_report()['unavailable']}")
    cgroup = confine.create_pids_cgroup(64) if ROOT else None
    try:
        out = child("return 1", spec(tmp_path, required=True, cgroup=cgroup,
                                     limits={"memory_bytes": 1 << 30, "cpu_seconds": 60, "file_bytes": 1 << 20,
                                             "processes": 64}))
    finally:
        if cgroup:
            confine.remove_cgroup(cgroup)
    assert out["ok"], out
    assert out["report"]["applied"] == list(confine.PROTECTIONS) and out["report"]["missing"] == []


@pytest.mark.parametrize(("bad", "named"), [
    ({"reed": []}, "reed"),
    ({"read": ["relative/path"]}, "'read'"),
    ({"connect_ports": [0]}, "connect_ports"),
    ({"limits": {"memory": 5}}, "memory"),
    ({"limits": {"cpu_seconds": -1}}, "limits.cpu_seconds"),
    ({"required": "yes"}, "required"),
    ({"cgroup": 3}, "cgroup"),
])
def test_a_bad_spec_is_refused_naming_the_key(bad: dict[str, Any], named: str) -> None:
    with pytest.raises(confine.InvalidConfinementSpec, match=named):
        confine.validate_spec(bad)


def test_load_spec_reads_json_or_a_file(tmp_path: Path) -> None:
    assert confine.load_spec('{"read": ["/x"]}') == {"read": ["/x"]}
    path = tmp_path / "spec.json"
    path.write_text('{"write": ["/y"]}')
    assert confine.load_spec(f"@{path}") == {"write": ["/y"]}
    with pytest.raises(confine.InvalidConfinementSpec, match="not valid JSON"):
        confine.load_spec("{read")
    with pytest.raises(confine.InvalidConfinementSpec, match="cannot read"):
        confine.load_spec(f"@{tmp_path / 'missing.json'}")


def test_support_report_names_every_protection_once() -> None:
    report = confine.support_report()
    named = report["available"] + [m["protection"] for m in report["unavailable"]]
    assert sorted(named) == sorted(confine.PROTECTIONS)
    assert report["landlock_abi"] == ABI


def test_landlock_structs_match_the_uapi() -> None:
    import ctypes

    assert ctypes.sizeof(landlock._PathBeneathAttr) == 12  # packed
    assert [landlock._attr_size(abi) for abi in (1, 3, 4, 5, 6, 7)] == [8, 8, 16, 16, 24, 24]
    assert landlock.fs_rights(1) == (1 << 13) - 1 and landlock.fs_rights(5) == (1 << 16) - 1
    assert landlock.fs_rights(4) == (1 << 15) - 1 and landlock.net_rights(3) == 0 and landlock.scopes(5) == 0


# --- the executor with --confine --------------------------------------------------------------------

ORDINARY_BLOCK = """
import json, math, threading
box = []
worker = threading.Thread(target=lambda: box.append(math.sqrt(16)))
worker.start(); worker.join()
table = {"root": box[0], "pi": round(math.pi, 3)}
print(json.dumps(table, sort_keys=True))
FINAL_VAR("table")
"""


def run_executor(tmp_path: Path, code: str, spec_: dict[str, Any] | None, *extra: str) -> tuple[int, dict[str, Any]]:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir(exist_ok=True)
    artifact = artifacts / "code.py"
    artifact.write_text(code, encoding="utf-8")
    argv = [sys.executable, "-m", "reference_agent.executor", "--artifact-path", str(artifact), "--run-id", "r1",
            "--iteration", "1", "--namespace-path", str(artifacts / "namespace_r1.pkl"), *extra]
    if spec_ is not None:
        argv += ["--confine", json.dumps(spec_)]
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                          cwd=tmp_path, timeout=60)
    return proc.returncode, json.loads((artifacts / "result_r1_iter1.json").read_text(encoding="utf-8"))


def executor_spec(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    return spec(tmp_path, write=[str(tmp_path / "artifacts")],
                limits={"memory_bytes": 2 << 30, "cpu_seconds": 60, "file_bytes": 64 << 20}, **changes)


@needs_landlock
def test_the_executor_runs_an_ordinary_block_confined(tmp_path: Path) -> None:
    code, result = run_executor(tmp_path, ORDINARY_BLOCK, executor_spec(tmp_path))
    assert code == 0, result
    assert result["status"] == "success", result["error"]
    assert result["stdout"] == '{"pi": 3.142, "root": 4.0}\n'
    assert result["final_answer"] == str({"root": 4.0, "pi": 3.142})
    assert "table" in result["namespace"]["kept"]
    assert (tmp_path / "artifacts" / "namespace_r1.pkl").exists()
    report = result["confinement"]
    assert {"filesystem_write", "filesystem_read", "network", "memory", "cpu_time", "file_size"} <= set(
        report["applied"])
    # The next block restores the pickled namespace under the same confinement.
    (tmp_path / "artifacts" / "result_r1_iter1.json").unlink()
    code, result = run_executor(tmp_path, "print(table['root'])\nopen('/etc/hostname').read()\n",
                                executor_spec(tmp_path))
    assert result["stdout"] == "4.0\n" and "table" in result["namespace"]["restored"]
    assert result["status"] == "error" and result["error"]["type"] == "PermissionError"


def test_the_executor_without_confine_reports_none(tmp_path: Path) -> None:
    code, result = run_executor(tmp_path, "print(1)", None)
    assert code == 0 and result["status"] == "success" and result["confinement"] is None


def test_the_executor_refuses_to_run_when_required_confinement_is_missing(tmp_path: Path) -> None:
    marker = tmp_path / "artifacts" / "ran.txt"
    impossible = executor_spec(tmp_path, required=True, cgroup=str(tmp_path / "no-such-cgroup"))
    impossible["limits"]["processes"] = 8
    code, result = run_executor(tmp_path, f"open({str(marker)!r}, 'w').write('ran')", impossible)
    assert code == 3
    assert not marker.exists()
    assert result["status"] == "error" and result["error"]["type"] == "ConfinementUnavailable"
    assert "processes" in result["error"]["message"] and "no-such-cgroup" in result["error"]["message"]
    assert result["confinement"]["missing"][0]["protection"] == "processes"


def test_the_executor_refuses_a_bad_spec_naming_the_key(tmp_path: Path) -> None:
    code, result = run_executor(tmp_path, "print(1)", {"reed": ["/x"]})
    assert code == 3 and result["error"]["type"] == "InvalidConfinementSpec" and "reed" in result["error"]["message"]


def _start_worker(tmp_path: Path, spec_: dict[str, Any]) -> tuple[subprocess.Popen[bytes], int, int]:
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "reference_agent.executor.worker", "--request-fd",
                             str(request_read), "--reply-fd", str(reply_write), "--confine", json.dumps(spec_)],
                            pass_fds=(request_read, reply_write), env={**os.environ, "PYTHONPATH": str(REPO)},
                            stderr=subprocess.PIPE, cwd=tmp_path)
    os.close(request_read)
    os.close(reply_write)
    return proc, request_write, reply_read


@needs_landlock
def test_the_warm_worker_confines_itself_once_and_reports_it_per_block(tmp_path: Path) -> None:
    proc, requests, replies = _start_worker(tmp_path, executor_spec(tmp_path))
    try:
        artifacts = tmp_path / "artifacts"
        artifacts.mkdir(exist_ok=True)
        results = []
        for n, code in enumerate(["x = 41", "print(x + 1)\nopen('/etc/hostname').read()"], start=1):
            artifact = artifacts / f"code_{n}.py"
            artifact.write_text(code)
            argv = ["--artifact-path", str(artifact), "--run-id", "w", "--iteration", str(n),
                    "--namespace-path", str(artifacts / "namespace_w.pkl")]
            os.write(requests, json.dumps(argv).encode() + b"\n")
            with os.fdopen(os.dup(replies), "rb", buffering=0) as reply:
                lines = b""
                while lines.count(b"\n") < 2:
                    lines += reply.read(1)
            assert json.loads(lines.splitlines()[1]) == {"code": 0}
            results.append(json.loads((artifacts / f"result_w_iter{n}.json").read_text()))
    finally:
        os.close(requests)
        proc.wait(timeout=10)
        os.close(replies)
    assert results[0]["confinement"] == results[1]["confinement"]
    assert "filesystem_read" in results[0]["confinement"]["applied"]
    assert results[1]["stdout"] == "42\n" and results[1]["error"]["type"] == "PermissionError"


def _worker_exit(tmp_path: Path, confinement: dict[str, Any]) -> tuple[int, str]:
    """A warm worker started with ``confinement`` that leaves before serving: its exit code and stderr."""
    proc, requests, replies = _start_worker(tmp_path, confinement)
    try:
        code = proc.wait(timeout=20)
        return code, proc.stderr.read().decode() if proc.stderr else ""
    finally:
        os.close(requests)
        os.close(replies)


def test_the_warm_worker_exits_3_when_required_confinement_is_missing(tmp_path: Path) -> None:
    impossible = spec(tmp_path, required=True, cgroup=str(tmp_path / "no-such-cgroup"), limits={"processes": 8})
    code, stderr = _worker_exit(tmp_path, impossible)
    assert code == 3
    assert "processes" in stderr and "confinement required but not available" in stderr


# --- what confined code can still do, and the guards -----------------------------------------------

@needs_landlock
def test_stdlib_extensions_time_zones_and_a_python_subprocess_work_confined(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("token")
    body = f"""
    import subprocess, sys, zoneinfo
    for name in ("zlib", "sqlite3", "lzma", "bz2", "hashlib", "ssl"):
        __import__(name)  # C extensions whose system libraries the loader must read
    zoneinfo.ZoneInfo("Europe/Paris")
    done = subprocess.run([sys.executable, "-c", "print(open({str(tmp_path / 'secret.txt')!r}).read())"],
                          capture_output=True, text=True)
    return [done.returncode, done.stderr.strip().splitlines()[-1]]
    """
    confined = child(body, spec(tmp_path))
    assert confined["ok"], confined
    assert confined["value"][0] == 1 and "PermissionError" in confined["value"][1]  # the grandchild is confined too


@needs_landlock
def test_a_process_that_already_runs_threads_is_not_reported_confined(tmp_path: Path) -> None:
    prelude = "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    report = child("return None", spec(tmp_path), prelude=prelude)["report"]
    missing = {m["protection"]: m["reason"] for m in report["missing"]}
    assert {"filesystem_write", "filesystem_read", "network"} <= set(missing)
    assert "threads" in missing["filesystem_read"]


@needs_landlock
def test_an_older_abi_is_handled_best_effort_and_names_what_it_lacks(tmp_path: Path, listeners: list[int]) -> None:
    prelude = "from reference_agent.executor import landlock\nlandlock.abi_version = lambda: 3\n"
    body = f"""
    import socket
    socket.create_connection(("127.0.0.1", {listeners[1]}), timeout=5).close()  # ABI 3 has no TCP rules
    open({str(tmp_path / 'outside')!r}, "w")
    """
    out = child(body, spec(tmp_path, connect_ports=[listeners[0]]), prelude=prelude)
    blocked(out, "PermissionError", errno.EACCES)  # the connect went through; the filesystem rules still hold
    missing = {m["protection"]: m["reason"] for m in out["report"]["missing"]}
    assert missing == {"network": "TCP rules need Landlock ABI 4 (Linux 6.7+); this kernel has ABI 3"}
    assert out["report"]["abi"] == 3 and "signals_scoped" not in out["report"]["extra"]


@pytest.mark.skipif(not ROOT, reason="switches the child to another uid")
def test_processes_capped_by_rlimit_nproc_for_a_non_root_user(tmp_path: Path) -> None:
    # The child drops to nobody after its imports, so RLIMIT_NPROC (which exempts root) binds it.
    setup = "import os\nos.setgid(65534)\nos.setuid(65534)\n"
    confined = child(FORKS, spec(tmp_path, write=[], limits={"processes": 8}), setup=setup)
    assert confined["value"]["refused"] == errno.EAGAIN and confined["value"]["forked"] <= 8, confined
    assert "processes" in confined["report"]["applied"]
    free = child(FORKS, None, setup=setup)
    assert free["value"] == {"forked": 50, "refused": None}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_tasks_of_uid_counts_threads_of_the_real_uid() -> None:
    assert confine._tasks_of_uid(os.getuid()) >= len(os.listdir("/proc/self/task"))
    assert confine._tasks_of_uid(2_000_000_123) == 0


@pytest.mark.skipif(not ROOT, reason="the pids cgroup needs root")
def test_remove_cgroup_kills_what_is_left_and_removes_it() -> None:
    cgroup = confine.create_pids_cgroup(4)
    if cgroup is None:
        pytest.skip("no writable pids cgroup hierarchy")
    with open(os.path.join(cgroup, "pids.max"), encoding="utf-8") as handle:
        assert handle.read().strip() == "4"
    joiner = (f"import os, time\nopen({os.path.join(cgroup, 'cgroup.procs')!r}, 'w').write(str(os.getpid()))\n"
              "print('in', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", joiner], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "in\n"
        confine.remove_cgroup(cgroup)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert not os.path.exists(cgroup)
    finally:
        proc.kill()
        proc.wait()


def test_create_pids_cgroup_is_none_when_not_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert confine.create_pids_cgroup(8) is None
    monkeypatch.setattr(confine.sys, "platform", "darwin")
    assert confine.create_pids_cgroup(8) is None


def test_the_warm_worker_exits_2_on_a_bad_spec_naming_the_key(tmp_path: Path) -> None:
    code, stderr = _worker_exit(tmp_path, {"limits": {"memory": 5}})
    assert code == 2
    assert "unknown limit(s) ['memory']" in stderr


@pytest.mark.skipif(not ROOT, reason="the pids cgroup needs root")
def test_a_dead_hosts_cgroup_is_removed_when_the_next_one_is_made() -> None:
    root = confine._pids_hierarchy()
    if root is None:
        pytest.skip("no writable pids cgroup hierarchy")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = os.path.join(root, f"rlm-exec-{dead.stdout.strip()}-0123456789ab")  # its host was killed
    mine = os.path.join(root, f"rlm-exec-{os.getpid()}-0123456789ab")  # a live host's: left alone
    os.mkdir(orphan)
    os.mkdir(mine)
    try:
        made = confine.create_pids_cgroup(4)
        assert made is not None
        confine.remove_cgroup(made)
        assert not os.path.exists(orphan) and os.path.exists(mine)
    finally:
        for path in (orphan, mine):
            if os.path.exists(path):
                os.rmdir(path)


@pytest.mark.parametrize(("code", "says"), [
    ("bytes(1 << 40)", "MemoryError: [blocked by the executor's confinement: this executor's memory limit is 512 MiB"),
    ("import os\nfd = os.open('big', os.O_WRONLY | os.O_CREAT)\nos.pwrite(fd, b'x', 1 << 21)",
     "[blocked by the executor's confinement: files may not grow past 2 MiB here (RLIMIT_FSIZE)]"),
    ("import socket\nsocket.socket().bind(('127.0.0.1', 0))",
     "[blocked by the executor's confinement: the only network connection allowed is the LM bridge"),
    ("open('/etc/hostname')", "[blocked by the executor's confinement: the code may write only in its work dir"),
], ids=["memory", "file-size", "network", "file"])
@needs_tcp_rules
def test_a_blocked_attempt_says_which_limit_stopped_it(tmp_path: Path, code: str, says: str) -> None:
    spec = {"read": [], "write": [str(tmp_path)], "connect_ports": [],
            "limits": {"memory_bytes": 512 << 20, "file_bytes": 2 << 20, "cpu_seconds": None, "processes": None}}
    artifact = tmp_path / "code.py"
    artifact.write_text(code + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-s", "-m", "reference_agent.executor", "--artifact-path", str(artifact),
                    "--run-id", "r", "--iteration", "1", "--confine", json.dumps(spec)], cwd=tmp_path, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    result = json.loads((tmp_path / "result_r_iter1.json").read_text(encoding="utf-8"))
    assert result["status"] == "error"
    assert says in f"{result['error']['type']}: {result['error']['message']}", result["error"]
