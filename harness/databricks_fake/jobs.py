"""Jobs API 2.2 one-time runs of the fake: ``runs/submit``, ``runs/get``, ``runs/get-output``, ``runs/cancel``.

A submitted ``spark_python_task`` runs the way Databricks runs it: a Python
process *execs* the file's source with ``sys.argv = [python_file, *parameters]``
and no ``__file__`` (databrickslabs/dbx#680), and a nonzero exit (an uncaught
exception, a nonzero SystemExit) fails the task. Only the standard library and
the task's declared libraries are importable: each ``libraries[].whl`` (or, on
serverless, the task environment's ``spec.dependencies``) must be a wheel under
``/Volumes``, which is unpacked into the run's site folder — what installing it
on the compute does. The interpreter is a bare virtualenv made once per fake
(``runtime``: the standard library and an empty site-packages), so neither the
harness's packages nor the repository are on its path: a task without Job_B's
payload fails with ``ModuleNotFoundError`` as on a workspace. It runs ``site``
as a cluster's Python does, which is how the /Volumes mount's limits
(``volume_mount.py``) reach every process of the task, children included. A library that is
missing or is not a wheel ends the run with LIBRARY_INSTALLATION_ERROR.

Every ``/Volumes/...`` argument is mapped to the fake's volume folder (what the
/Volumes mount is on real compute); the process gets a private working folder,
a scrubbed environment plus ``job_env`` (what a cluster's ``spark_env_vars``
are, e.g. ``GOOGLE_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` for Job_B's direct
sub-LM calls; the harness points them at its scripted endpoint).

States follow the REST shapes, both of them: ``status`` (``state`` PENDING ->
RUNNING -> TERMINATED, ``termination_details`` code/type/message) and the
deprecated ``state`` (``life_cycle_state`` / ``result_state`` /
``state_message``), in runs/get and in get-output's ``metadata``; a run reports
PENDING at its first poll (waiting for compute) unless
``complete_runs_on_submit``, which makes runs/submit answer once the run has
ended (one poll per run, for reproducible recordings). get-output answers for
the task run only, with ``logs`` (stdout), ``error`` and ``error_trace``
(stderr) as a Python task's.

``idempotency_token`` is honoured as the Jobs API documents it: a submit whose
token an earlier submit carried starts nothing and answers that run's
``run_id`` (for as long as the run exists: the fake keeps its runs for its own
lifetime and has no ``runs/delete``); a token over 64 characters is refused
with INVALID_PARAMETER_VALUE.

The ledger (``JobsApi.ledger()``) is the workspace's own record of every submit: the run it created or the
earlier run its token named, the token, the task it runs, and whether a process ran the task's code. A crash
matrix judges "effects exactly once" by it. ``on_submit`` is told of each run a submit creates, before the run
starts; raising ``NoReply`` there leaves the client without an answer (it was killed) and holds the run PENDING,
its compute starting, until the workspace's next Jobs request or ``launch_held()``: a client that restarts meets
its run unfinished, as one restarting within a real run's minutes of startup does.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import venv
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .faults import Faults
from .files import VolumeMap
from .replies import ApiError, NoReply, Reply, bad_request, ok
from .volume_mount import mount_environment

PREFIX = "/api/2.2/jobs/runs"
FAKE_JOB_ID = 424242
_TAIL = 64_000
IDEMPOTENCY_TOKEN_MAX_CHARS = 64  # runs/submit: "This token must have at most 64 characters."
_FAILED_MESSAGE = "Workload failed, see run output for details"
# Exec the file as Databricks does: no __file__, sys.argv = [file, *parameters], __name__ == "__main__".
_EXEC_FILE = (
    "import sys\n"
    "path = sys.argv[1]\n"
    "sys.argv = [path, *sys.argv[2:]]\n"
    "with open(path, encoding='utf-8') as handle:\n"
    "    source = handle.read()\n"
    "del path, handle\n"
    "exec(compile(source, sys.argv[0], 'exec'), {'__name__': '__main__', '__builtins__': __builtins__})\n"
)


@dataclass(frozen=True)
class Ending:
    """How a run ended, in both shapes: ``status.termination_details`` and the deprecated ``state``."""

    code: str
    type: str
    message: str
    life_cycle_state: str = "TERMINATED"
    result_state: str | None = None


# termination code (or TIMEDOUT, which Jobs 2.2 reports as CANCELED) -> (type, life_cycle_state, result_state)
ENDINGS: dict[str, tuple[str, str, str | None, str]] = {
    "SUCCESS": ("SUCCESS", "TERMINATED", "SUCCESS", "SUCCESS"),
    "RUN_EXECUTION_ERROR": ("CLIENT_ERROR", "TERMINATED", "FAILED", "RUN_EXECUTION_ERROR"),
    "USER_CANCELED": ("CLIENT_ERROR", "TERMINATED", "CANCELED", "USER_CANCELED"),
    "CANCELED": ("CLIENT_ERROR", "TERMINATED", "CANCELED", "CANCELED"),
    "TIMEDOUT": ("CLIENT_ERROR", "TERMINATED", "TIMEDOUT", "CANCELED"),
    "SKIPPED": ("SUCCESS", "SKIPPED", None, "SKIPPED"),
    "INTERNAL_ERROR": ("INTERNAL_ERROR", "INTERNAL_ERROR", "FAILED", "INTERNAL_ERROR"),
    "LIBRARY_INSTALLATION_ERROR": ("CLIENT_ERROR", "INTERNAL_ERROR", "FAILED", "LIBRARY_INSTALLATION_ERROR"),
    "CLOUD_FAILURE": ("CLOUD_FAILURE", "INTERNAL_ERROR", "FAILED", "CLOUD_FAILURE"),
}


def ending(name: str, message: str) -> Ending:
    if name not in ENDINGS:
        raise ValueError(f"unknown termination code {name!r}; the fake knows {sorted(ENDINGS)}")
    kind, life, result, code = ENDINGS[name]
    return Ending(code, kind, message, life, result)


@dataclass(frozen=True)
class Submit:
    """One ``runs/submit`` as the workspace saw it (a line of the ledger)."""

    ordinal: int  # counted from 0 over the workspace's life
    run_id: int
    idempotency_token: str | None
    started_run: bool  # False: the token named an earlier run, which was answered instead
    task: str  # what the run executes: the python file and its parameters
    executed: bool = False  # a process ran the task's code (ledger(): as of now)
    created: int = 0  # a run it started: how many runs the workspace had created before it (its index among them)


@dataclass
class _Run:
    run_id: int
    task_run_id: int
    run_name: str
    task_key: str
    timeout_s: float
    started: float = field(default_factory=time.time)
    proc: subprocess.Popen | None = None
    workdir: Path | None = None
    ending: Ending | None = None
    ended: float | None = None
    error: str | None = None
    error_trace: str | None = None
    pending_forever: bool = False
    pending_polls: int = 0  # runs/get answers PENDING this many more times (compute starting)
    held: tuple[dict[str, Any], list[str]] | None = None  # (python task, wheels): its launch waits (on_submit)


class JobsApi:
    def __init__(self, volumes: VolumeMap, faults: Faults, host: str, workspace_id: str, *,
                 complete_runs_on_submit: bool = False, job_env: dict[str, str] | None = None,
                 pending_polls: int = 1) -> None:
        self.volumes = volumes
        self.job_env = job_env if job_env is not None else {}  # shared with the FakeWorkspace: set it any time
        self.faults = faults
        self.host = host
        self.workspace_id = workspace_id
        # Deterministic runs for cassettes: runs/submit answers once the run has ended, so the first
        # runs/get already reports TERMINATED and a recording holds exactly one poll per run.
        self.complete_runs_on_submit = complete_runs_on_submit
        self.pending_polls = pending_polls
        self.runs: dict[int, _Run] = {}
        self._by_task: dict[int, _Run] = {}
        self._by_token: dict[str, int] = {}  # idempotency_token -> the run the first submit with it started
        self._ids = itertools.count(1001, 2)
        self._lock = threading.RLock()
        self._runtime: Path | None = None  # the bare virtualenv Job_B runs in, made at the first run
        self._submits: list[Submit] = []
        # Told of each run a submit creates, before it starts; may raise NoReply (see the module docstring).
        self.on_submit: Callable[[Submit], None] | None = None

    def runtime_python(self) -> str:
        """The interpreter of Job_B: a virtualenv with nothing installed, made once (a few ms, no download)."""
        with self._lock:
            if self._runtime is None:
                folder = Path(tempfile.mkdtemp(prefix="fake-runtime-"))
                venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(folder)
                self._runtime = folder
            return str(self._runtime / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))

    def close(self) -> None:
        with self._lock:
            if self._runtime is not None:
                shutil.rmtree(self._runtime, ignore_errors=True)
                self._runtime = None
            for run in self.runs.values():
                self._kill(run)
                if run.workdir is not None:
                    shutil.rmtree(run.workdir, ignore_errors=True)

    def ledger(self) -> list[Submit]:
        """Every submit in order, each with whether its run's code has run by now."""
        with self._lock:
            return [replace(s, executed=s.started_run and self.runs[s.run_id].proc is not None)
                    for s in self._submits]

    def launch_held(self) -> None:
        """Start the runs whose launch waits (their compute is up): what the workspace's next request does too."""
        with self._lock:
            for run in self.runs.values():
                if run.held is not None and run.ending is None:
                    python, libraries = run.held
                    run.held = None
                    self._launch(run, python, libraries, finish=False)

    def handle(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> Reply:
        action = path[len(PREFIX):].strip("/")
        with self._lock:
            self.launch_held()
            if method == "POST" and action == "submit":
                return ok({"run_id": self._submit(body)})
            if method == "GET" and action == "get":
                return ok(self._describe(self._run(query.get("run_id")), poll=True))
            if method == "GET" and action == "get-output":
                return ok(self._output(query.get("run_id")))
            if method == "POST" and action == "cancel":
                self._cancel(self._run(body.get("run_id")))
                return ok({})
        return Reply(404, b'{"error_code":"ENDPOINT_NOT_FOUND","message":"No API found"}',
                     {"Content-Type": "application/json"})

    # --- submit ----------------------------------------------------------------------

    def _submit(self, body: dict[str, Any]) -> int:
        token = body.get("idempotency_token")
        if token is not None:
            if not isinstance(token, str) or len(token) > IDEMPOTENCY_TOKEN_MAX_CHARS:
                raise bad_request(f"idempotency_token must be a string of at most {IDEMPOTENCY_TOKEN_MAX_CHARS} "
                                  f"characters, got {token!r}")
            if token in self._by_token:  # a retried submit: the run it started, never a second one
                self._submits.append(Submit(len(self._submits), self._by_token[token], token, False,
                                            _task_text(body)))
                return self._by_token[token]
        tasks = body.get("tasks") or []
        if len(tasks) != 1:
            raise bad_request("the fake workspace runs exactly one task per submitted run")
        task = tasks[0]
        if "python_wheel_task" in task:
            raise bad_request("the fake workspace runs spark_python_task only, not python_wheel_task")
        python = task.get("spark_python_task") or {}
        if not python.get("python_file"):
            raise bad_request("tasks[0].spark_python_task.python_file is required")
        environments = {e.get("environment_key"): e for e in body.get("environments") or []}
        if task.get("environment_key") and task["environment_key"] not in environments:
            raise bad_request(f"environment_key {task['environment_key']!r} is not in environments")
        libraries = _declared_wheels(task, environments)
        timeout = float(task.get("timeout_seconds") or body.get("timeout_seconds") or 0)
        run_id = next(self._ids)
        run = _Run(run_id, run_id + 1, body.get("run_name") or "Untitled", task.get("task_key") or "task", timeout)
        self.runs[run_id] = run
        self._by_task[run.task_run_id] = run
        if token is not None:
            self._by_token[token] = run_id
        created = sum(1 for s in self._submits if s.started_run)
        submit = Submit(len(self._submits), run_id, token, True, _task_text(body), created=created)
        self._submits.append(submit)
        faults = self.faults
        if faults.end_runs_with:
            self._end(run, ending(*faults.end_runs_with))
        elif faults.fail_runs_with is not None:
            trace = faults.fail_runs_with
            run.error = next((line for line in reversed(trace.splitlines()) if line.strip()), "failed")
            run.error_trace = trace
            self._end(run, ending("RUN_EXECUTION_ERROR", _FAILED_MESSAGE))
        elif faults.runs_stay_pending:
            run.pending_forever = True
        else:
            if self.on_submit is not None:
                try:
                    self.on_submit(submit)
                except NoReply:
                    run.held = (python, libraries)  # PENDING until the next Jobs request (launch_held)
                    raise
            self._launch(run, python, libraries, finish=self.complete_runs_on_submit)
        return run_id

    def _launch(self, run: _Run, python: dict[str, Any], libraries: list[str], *, finish: bool) -> None:
        run.workdir = Path(tempfile.mkdtemp(prefix=f"fake-run-{run.run_id}-"))
        site = self._install(run, libraries)
        if site is not None:
            self._start(run, python, site)
            if finish:
                self._finish(run)
            else:
                run.pending_polls = self.pending_polls

    def _install(self, run: _Run, wheels: list[str]) -> Path | None:
        """Unpack each declared wheel into the run's site folder; None (and the run ended) if one cannot be."""
        assert run.workdir is not None
        site = run.workdir / "site"
        site.mkdir()
        for wheel in wheels:
            problem = None
            if not wheel.startswith("/Volumes/"):
                problem = "the fake workspace installs wheels from /Volumes only (no PyPI)"
            else:
                local = self.volumes.local(wheel)
                if not local.is_file():
                    problem = "the file does not exist"
                else:
                    try:
                        with zipfile.ZipFile(local) as archive:
                            if not any(n.endswith(".dist-info/WHEEL") for n in archive.namelist()):
                                problem = "it is not a wheel (no .dist-info/WHEEL)"
                            else:
                                archive.extractall(site)
                    except zipfile.BadZipFile:
                        problem = "it is not a wheel (not a zip file)"
            if problem:
                self._end(run, ending("LIBRARY_INSTALLATION_ERROR", f"Library installation failed for library "
                                                                    f"due to user error. Error messages: {wheel}: "
                                                                    f"{problem}"))
                return None
        return site

    def _start(self, run: _Run, python: dict[str, Any], site: Path) -> None:
        assert run.workdir is not None
        script = self.volumes.maybe_local(python["python_file"])
        args = [self.volumes.maybe_local(str(a)) for a in python.get("parameters") or []]
        env = {name: os.environ[name] for name in ("PATH", "LANG") if name in os.environ}
        env.update(self.job_env)
        # The installed libraries and nothing else: the runtime is a bare venv (the harness's site-packages, and
        # so the editable reference_agent, are not in it), as on a cluster that never had them.
        env.update(HOME=str(run.workdir), PYTHONPATH=str(site), PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")
        env.update(mount_environment(self.volumes.root, env))  # the /Volumes FUSE mount's limits (volume_mount.py)
        with open(run.workdir / "stdout", "wb") as out, open(run.workdir / "stderr", "wb") as err:
            run.proc = subprocess.Popen([self.runtime_python(), "-c", _EXEC_FILE, script, *args],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=run.workdir, env=env,
                                        start_new_session=True)

    def _finish(self, run: _Run) -> None:
        """Wait for the run's process (at most its timeout_seconds) and settle its final state."""
        assert run.proc is not None
        try:
            run.proc.wait(timeout=run.timeout_s or None)
        except subprocess.TimeoutExpired:
            self._kill(run)
            self._end(run, ending("TIMEDOUT", f"Run timed out after {run.timeout_s:g} seconds."))
            return
        self._settle(run)

    def _end(self, run: _Run, end: Ending) -> None:
        run.ending, run.ended = end, time.time()

    # --- state -------------------------------------------------------------------------

    def _run(self, raw: Any) -> _Run:
        try:
            run = self.runs.get(int(raw))
        except (TypeError, ValueError):
            run = None
        if run is None:
            raise bad_request(f"Run {raw} does not exist.")
        return run

    def _settle(self, run: _Run) -> tuple[str, str]:
        """The run's current (status.state, message); settles its ending once its process has exited."""
        if run.ending is not None:
            return "TERMINATED", run.ending.message
        if run.pending_forever or run.held is not None:
            return "PENDING", "Waiting for cluster to start."
        assert run.proc is not None
        code = run.proc.poll()
        if code is None:
            if run.timeout_s and time.time() - run.started > run.timeout_s:
                self._kill(run)
                self._end(run, ending("TIMEDOUT", f"Run timed out after {run.timeout_s:g} seconds."))
                return "TERMINATED", run.ending.message  # type: ignore[union-attr]
            return "RUNNING", "In run"
        stderr = self._read(run, "stderr")
        if code == 0:
            self._end(run, ending("SUCCESS", ""))
        else:
            lines = [line for line in stderr.splitlines() if line.strip()]
            run.error = self.volumes.as_mounted(lines[-1]) if lines else f"Python process exited with code {code}"
            run.error_trace = self.volumes.as_mounted(stderr) or None
            self._end(run, ending("RUN_EXECUTION_ERROR", _FAILED_MESSAGE))
        return "TERMINATED", run.ending.message  # type: ignore[union-attr]

    def _states(self, run: _Run, *, poll: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """(``state``, ``status``) as runs/get answers them; ``poll`` counts a runs/get (PENDING at first)."""
        if poll and run.pending_polls > 0 and run.ending is None:
            run.pending_polls -= 1
            now, message = "PENDING", "Waiting for cluster to start."
        else:
            now, message = self._settle(run)
        end = run.ending if now == "TERMINATED" else None
        if end is None:
            state = {"life_cycle_state": now, "state_message": message, "user_cancelled_or_timedout": False}
            return state, {"state": now}
        state = {"life_cycle_state": end.life_cycle_state, "state_message": end.message,
                 "user_cancelled_or_timedout": end.result_state in ("CANCELED", "TIMEDOUT")}
        if end.result_state:
            state["result_state"] = end.result_state
        status = {"state": "TERMINATED",
                  "termination_details": {"code": end.code, "type": end.type, "message": end.message}}
        return state, status

    def _url(self, run_id: int) -> str:
        return f"{self.host}/?o={self.workspace_id}#job/{FAKE_JOB_ID}/run/{run_id}"

    def _describe(self, run: _Run, *, poll: bool = False) -> dict[str, Any]:
        state, status = self._states(run, poll=poll)
        times = {"start_time": int(run.started * 1000), "end_time": int((run.ended or 0) * 1000)}
        task = {"run_id": run.task_run_id, "task_key": run.task_key, "state": state, "status": status,
                "run_page_url": self._url(run.task_run_id), **times}
        return {"job_id": FAKE_JOB_ID, "run_id": run.run_id, "run_name": run.run_name, "run_type": "SUBMIT_RUN",
                "state": state, "status": status, "run_page_url": self._url(run.run_id), "tasks": [task], **times}

    def _output(self, raw: Any) -> dict[str, Any]:
        try:
            run = self._by_task.get(int(raw))
        except (TypeError, ValueError):
            run = None
        if run is None:
            if raw is not None and str(raw).isdigit() and int(raw) in self.runs:
                raise bad_request("Retrieving the output of runs with multiple tasks is not supported. Please "
                                  "retrieve the output of each individual task run instead.")
            raise bad_request(f"Run {raw} does not exist.")
        state, status = self._states(run)
        logs = self.volumes.as_mounted(self._read(run, "stdout"))
        output: dict[str, Any] = {
            "metadata": {"run_id": run.task_run_id, "task_key": run.task_key, "state": state, "status": status,
                         "run_page_url": self._url(run.task_run_id)},
            "logs": logs[-_TAIL:],
            "logs_truncated": len(logs) > _TAIL,
        }
        if run.error:
            output["error"] = run.error
        if run.error_trace:
            output["error_trace"] = run.error_trace[-_TAIL:]
        return output

    def _cancel(self, run: _Run) -> None:
        run.held = None  # a held run cancelled never starts
        if run.ending is not None:
            return
        self._kill(run)
        self._end(run, ending("USER_CANCELED", "Run cancelled."))

    @staticmethod
    def _kill(run: _Run) -> None:
        if run.proc is not None and run.proc.poll() is None:
            try:
                os.killpg(run.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            run.proc.wait()

    @staticmethod
    def _read(run: _Run, name: str) -> str:
        if run.workdir is None:
            return ""
        try:
            return (run.workdir / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


def _task_text(body: dict[str, Any]) -> str:
    """What a submitted run executes, as text: its task's python file and parameters (the ledger compares them)."""
    python = ((body.get("tasks") or [{}])[0] or {}).get("spark_python_task") or {}
    return " ".join(str(part) for part in (python.get("python_file"), *(python.get("parameters") or [])))


def _declared_wheels(task: dict[str, Any], environments: dict[str | None, dict[str, Any]]) -> list[str]:
    """The wheels a task declares: ``libraries[].whl`` (clusters) or its environment's ``spec.dependencies``."""
    wheels = []
    for library in task.get("libraries") or []:
        if not isinstance(library, dict) or set(library) != {"whl"}:
            raise ApiError(400, "INVALID_PARAMETER_VALUE",
                           f"the fake workspace installs only {{'whl': '/Volumes/...'}} libraries, got {library!r}")
        wheels.append(str(library["whl"]))
    key = task.get("environment_key")
    if key:
        spec = environments[key].get("spec") or {}
        wheels += [str(d) for d in spec.get("dependencies") or []]
    return wheels
