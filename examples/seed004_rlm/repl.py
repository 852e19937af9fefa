"""Host side of the REPL: one worker subprocess per session, so variables persist across iterations.

The worker gets a clean environment (``worker_env``): PATH, HOME, LANG, PYTHONPATH, and what
``llm_query`` needs to reach a model -- GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL and RLM_SUBLM_MODEL.
Nothing else of the host's environment (cloud credentials, tokens) reaches executed code.

A block that runs past the timeout kills its worker; the session's next block starts a fresh one
(its variables are gone, and the result says so).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("repl_worker.py")
PASSED_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "RLM_SUBLM_MODEL")
"""The only host variables a worker sees (those set on the host); llm_query needs the last three."""


def worker_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in PASSED_ENV if name in source}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@dataclass(frozen=True)
class ExecutionOutcome:
    stdout: str
    stdout_chars: int
    stderr: str
    error: str | None
    final_answer: str | None
    sublm_calls: int = 0
    fatal: bool = False  # the REPL itself could not run (not an error of the code)


class _Worker:
    def __init__(self) -> None:
        self._cwd = tempfile.TemporaryDirectory(prefix="rlm-repl-")
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=worker_env(), cwd=self._cwd.name, text=True, encoding="utf-8",
        )
        self.lock = threading.Lock()

    def request(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Send one request and wait for its answer; None when the worker died first."""
        assert self.process.stdin and self.process.stdout
        with self.lock:
            try:
                self.process.stdin.write(json.dumps(payload) + "\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                return None
            line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        # A request still reading (a timed-out block) sees EOF now; close the pipes once it has let go.
        if self.lock.acquire(timeout=5):
            try:
                for stream in (self.process.stdin, self.process.stdout):
                    if stream:
                        with contextlib.suppress(OSError):
                            stream.close()
            finally:
                self.lock.release()
        self._cwd.cleanup()


class ReplPool:
    """Workers by session id (the least recently used one is closed past ``max_workers``)."""

    def __init__(self, *, timeout_s: float = 30.0, stdout_cap: int = 100_000, max_workers: int = 16) -> None:
        self.timeout_s = timeout_s
        self.stdout_cap = stdout_cap
        self.max_workers = max_workers
        self._workers: OrderedDict[str, _Worker] = OrderedDict()
        atexit.register(self.close)

    def _worker_for(self, session_key: str) -> _Worker:
        worker = self._workers.get(session_key)
        if worker is not None and worker.process.poll() is None:
            self._workers.move_to_end(session_key)
            return worker
        if worker is not None:
            worker.close()
        worker = self._workers[session_key] = _Worker()
        while len(self._workers) > self.max_workers:
            self._workers.popitem(last=False)[1].close()
        return worker

    async def run(self, session_key: str, blocks: list[str], context: Any) -> ExecutionOutcome:
        try:
            worker = self._worker_for(session_key)
        except OSError as exc:
            return ExecutionOutcome("", 0, "", f"REPL worker could not start: {exc}", None, fatal=True)
        payload = {"blocks": blocks, "context": context, "stdout_cap": self.stdout_cap}
        try:
            answer = await asyncio.wait_for(asyncio.to_thread(worker.request, payload), self.timeout_s)
        except asyncio.TimeoutError:
            self.discard(session_key)
            return ExecutionOutcome("", 0, "", f"TimeoutError: the code ran longer than {self.timeout_s:g}s and was "
                                    "stopped; REPL variables were lost", None)
        if answer is None:
            code = worker.process.poll()
            self.discard(session_key)
            return ExecutionOutcome("", 0, "", f"REPL worker exited (code {code}); REPL variables were lost", None)
        return ExecutionOutcome(
            stdout=answer["stdout"], stdout_chars=answer["stdout_chars"], stderr=answer["stderr"],
            error=answer["error"], final_answer=answer["final_answer"], sublm_calls=answer["sublm_calls"],
        )

    def discard(self, session_key: str) -> None:
        worker = self._workers.pop(session_key, None)
        if worker is not None:
            worker.close()

    def close(self) -> None:
        while self._workers:
            self._workers.popitem()[1].close()
