"""Jobs API 2.2 one-time runs of the fake: ``runs/submit``, ``runs/get``, ``runs/get-output``, ``runs/cancel``.

A submitted ``spark_python_task`` runs as a local subprocess: ``python
<python_file> <parameters>``, with every ``/Volumes/...`` argument mapped to
the fake's volume folder (what the /Volumes mount is on real compute), a
private working folder, a scrubbed environment and ``reference_agent`` on
``PYTHONPATH`` (what the project wheel is on real compute). ``job_env`` is
added to that environment: what a cluster's ``spark_env_vars`` are on real
compute, e.g. ``GOOGLE_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` for Job_B's
direct sub-LM calls (the harness points them at its scripted endpoint). States follow the
REST shapes: ``state.life_cycle_state`` / ``result_state`` / ``state_message``,
``run_page_url``, ``tasks[].run_id``; get-output answers for the task run only,
with ``logs`` (stdout), ``error`` and ``error_trace`` (stderr) as a Python task's.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .faults import Faults
from .files import VolumeMap
from .replies import Reply, bad_request, ok
from .volume_mount import mount_environment

PREFIX = "/api/2.2/jobs/runs"
FAKE_JOB_ID = 424242
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_TAIL = 64_000
_FAILED_MESSAGE = "Workload failed, see run output for details"


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
    final: tuple[str, str | None, str] | None = None  # (life_cycle_state, result_state, state_message)
    ended: float | None = None
    error: str | None = None
    error_trace: str | None = None
    pending_forever: bool = False


class JobsApi:
    def __init__(self, volumes: VolumeMap, faults: Faults, host: str, workspace_id: str, *,
                 complete_runs_on_submit: bool = False, job_env: dict[str, str] | None = None) -> None:
        self.volumes = volumes
        self.job_env = job_env if job_env is not None else {}  # shared with the FakeWorkspace: set it any time
        self.faults = faults
        self.host = host
        self.workspace_id = workspace_id
        # Deterministic runs for cassettes: runs/submit answers once the run has ended, so the first
        # runs/get already reports TERMINATED and a recording holds exactly one poll per run.
        self.complete_runs_on_submit = complete_runs_on_submit
        self.runs: dict[int, _Run] = {}
        self._by_task: dict[int, _Run] = {}
        self._ids = itertools.count(1001, 2)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            for run in self.runs.values():
                self._kill(run)
                if run.workdir is not None:
                    shutil.rmtree(run.workdir, ignore_errors=True)

    def handle(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> Reply:
        action = path[len(PREFIX):].strip("/")
        with self._lock:
            if method == "POST" and action == "submit":
                return ok({"run_id": self._submit(body)})
            if method == "GET" and action == "get":
                return ok(self._describe(self._run(query.get("run_id"))))
            if method == "GET" and action == "get-output":
                return ok(self._output(query.get("run_id")))
            if method == "POST" and action == "cancel":
                self._cancel(self._run(body.get("run_id")))
                return ok({})
        return Reply(404, b'{"error_code":"ENDPOINT_NOT_FOUND","message":"No API found"}',
                     {"Content-Type": "application/json"})

    # --- submit ----------------------------------------------------------------------

    def _submit(self, body: dict[str, Any]) -> int:
        tasks = body.get("tasks") or []
        if len(tasks) != 1:
            raise bad_request("the fake workspace runs exactly one task per submitted run")
        task = tasks[0]
        if "python_wheel_task" in task:
            raise bad_request("the fake workspace runs spark_python_task only, not python_wheel_task")
        python = task.get("spark_python_task") or {}
        if not python.get("python_file"):
            raise bad_request("tasks[0].spark_python_task.python_file is required")
        environments = {e.get("environment_key") for e in body.get("environments") or []}
        if task.get("environment_key") and task["environment_key"] not in environments:
            raise bad_request(f"environment_key {task['environment_key']!r} is not in environments")
        timeout = float(task.get("timeout_seconds") or body.get("timeout_seconds") or 0)
        run_id = next(self._ids)
        run = _Run(run_id, run_id + 1, body.get("run_name") or "Untitled", task.get("task_key") or "task", timeout)
        self.runs[run_id] = run
        self._by_task[run.task_run_id] = run
        faults = self.faults
        if faults.force_run_state:
            run.final, run.ended = faults.force_run_state, time.time()
        elif faults.fail_runs_with is not None:
            trace = faults.fail_runs_with
            run.final, run.ended = ("TERMINATED", "FAILED", _FAILED_MESSAGE), time.time()
            run.error = next((line for line in reversed(trace.splitlines()) if line.strip()), "failed")
            run.error_trace = trace
        elif faults.runs_stay_pending:
            run.pending_forever = True
        else:
            self._start(run, python)
            if self.complete_runs_on_submit:
                self._finish(run)
        return run_id

    def _start(self, run: _Run, python: dict[str, Any]) -> None:
        script = self.volumes.maybe_local(python["python_file"])
        args = [self.volumes.maybe_local(str(a)) for a in python.get("parameters") or []]
        run.workdir = Path(tempfile.mkdtemp(prefix=f"fake-run-{run.run_id}-"))
        env = {name: os.environ[name] for name in ("PATH", "LANG") if name in os.environ}
        env.update(self.job_env)
        env.update(HOME=str(run.workdir), PYTHONPATH=_PACKAGE_PARENT, PYTHONHASHSEED="0", PYTHONIOENCODING="utf-8")
        env.update(mount_environment(self.volumes.root, env))  # the /Volumes FUSE mount's limits (volume_mount.py)
        with open(run.workdir / "stdout", "wb") as out, open(run.workdir / "stderr", "wb") as err:
            run.proc = subprocess.Popen([sys.executable, "-s", script, *args], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, cwd=run.workdir, env=env, start_new_session=True)

    def _finish(self, run: _Run) -> None:
        """Wait for the run's process (at most its timeout_seconds) and settle its final state."""
        assert run.proc is not None
        try:
            run.proc.wait(timeout=run.timeout_s or None)
        except subprocess.TimeoutExpired:
            self._kill(run)
            run.final, run.ended = ("TERMINATED", "TIMEDOUT", f"Run timed out after {run.timeout_s:g} seconds."), time.time()
            return
        self._state(run)

    # --- state -------------------------------------------------------------------------

    def _run(self, raw: Any) -> _Run:
        try:
            run = self.runs.get(int(raw))
        except (TypeError, ValueError):
            run = None
        if run is None:
            raise bad_request(f"Run {raw} does not exist.")
        return run

    def _state(self, run: _Run) -> tuple[str, str | None, str]:
        if run.final is not None:
            return run.final
        if run.pending_forever:
            return ("PENDING", None, "Waiting for cluster to start.")
        assert run.proc is not None
        code = run.proc.poll()
        if code is None:
            if run.timeout_s and time.time() - run.started > run.timeout_s:
                self._kill(run)
                run.final = ("TERMINATED", "TIMEDOUT", f"Run timed out after {run.timeout_s:g} seconds.")
                run.ended = time.time()
                return run.final
            return ("RUNNING", None, "In run")
        stderr = self._read(run, "stderr")
        if code == 0:
            run.final = ("TERMINATED", "SUCCESS", "")
        else:
            run.final = ("TERMINATED", "FAILED", _FAILED_MESSAGE)
            lines = [line for line in stderr.splitlines() if line.strip()]
            run.error = self.volumes.as_mounted(lines[-1]) if lines else f"Python process exited with code {code}"
            run.error_trace = self.volumes.as_mounted(stderr) or None
        run.ended = time.time()
        return run.final

    def _state_dict(self, run: _Run) -> dict[str, Any]:
        life, result, message = self._state(run)
        state: dict[str, Any] = {"life_cycle_state": life, "state_message": message,
                                 "user_cancelled_or_timedout": result in ("CANCELED", "TIMEDOUT")}
        if result:
            state["result_state"] = result
        return state

    def _url(self, run_id: int) -> str:
        return f"{self.host}/?o={self.workspace_id}#job/{FAKE_JOB_ID}/run/{run_id}"

    def _describe(self, run: _Run) -> dict[str, Any]:
        state = self._state_dict(run)
        times = {"start_time": int(run.started * 1000), "end_time": int((run.ended or 0) * 1000)}
        task = {"run_id": run.task_run_id, "task_key": run.task_key, "state": state,
                "run_page_url": self._url(run.task_run_id), **times}
        return {"job_id": FAKE_JOB_ID, "run_id": run.run_id, "run_name": run.run_name, "run_type": "SUBMIT_RUN",
                "state": state, "run_page_url": self._url(run.run_id), "tasks": [task], **times}

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
        self._state(run)
        logs = self.volumes.as_mounted(self._read(run, "stdout"))
        output: dict[str, Any] = {
            "metadata": {"run_id": run.task_run_id, "task_key": run.task_key, "state": self._state_dict(run),
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
        if run.final is not None and run.final[0] in ("TERMINATED", "SKIPPED", "INTERNAL_ERROR"):
            return
        self._kill(run)
        run.final, run.ended = ("TERMINATED", "CANCELED", "Run cancelled."), time.time()

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
