"""Warm workers forked from a fork server (``executor/forkserver.py``) instead of started afresh.

``start_worker`` gives a process handle with what ``WarmExecutor`` uses of ``subprocess.Popen`` (``pid``,
``poll``, ``wait``, ``returncode``, ``stdout``, ``stderr``). The worker is a child of the fork server, not of this
process, so the server reports its exit code; when the server itself is gone, the workers it forked are killed
(their process groups) and read as killed (``-SIGKILL``), and the next worker gets a new server.

One server per (interpreter, environment but HOME) and per process: a forked host (``fork()``
after the server started) starts its own. Where there is no fork server to be had (not Linux, no SCM_RIGHTS,
the server fails), ``start_worker`` returns None and the caller starts the worker afresh.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any

from .process import kill_group, proc_stat

SUPPORTED = sys.platform.startswith("linux") and hasattr(socket, "send_fds")
_ANSWER_WAIT_S = 10.0  # how long the server may take to fork a worker before it counts as broken
_GONE_CODE = -signal.SIGKILL


class ForkedWorker:
    """A worker forked by a ``ForkServer``: the parts of ``subprocess.Popen`` the warm executor uses."""

    def __init__(self, pid: int, server: ForkServer, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self._server = server

    @property
    def returncode(self) -> int | None:
        return self._server.exit_code(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self._server.wait_exit(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
        return code


class ForkServer:
    """One ``python -m reference_agent.executor.forkserver`` process and the thread reading its messages."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.folder = tempfile.mkdtemp(prefix="rlm-jobb-forkserver-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python, "-s", "-m", "reference_agent.executor.forkserver", "--control-fd", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd=self.folder, env={**env, "HOME": self.folder}, start_new_session=True,
                pass_fds=(theirs.fileno(),))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._control = ours
        self._send_lock = threading.Lock()  # one spawn at a time: its answer is the next one the server sends
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._exits: dict[int, int] = {}
        self._forked: set[int] = set()
        self.forked_any = False
        self._changed = threading.Condition()
        self.alive = True
        self._reader = threading.Thread(target=self._read, name=f"rlm-forkserver-{self.proc.pid}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while message := self._control.recv(65536):
                data = json.loads(message)
                if "exited" in data:
                    with self._changed:
                        self._exits[data["exited"]] = data["code"]
                        self._changed.notify_all()
                else:
                    self._answers.put(data)
        except (OSError, ValueError):
            pass
        self._gone()

    def _gone(self) -> None:
        """The server died (or was closed): its workers go too, as killed; nobody waits for an answer."""
        with self._changed:
            self.alive = False
            orphans = self._forked - self._exits.keys()
            for pid in orphans:
                kill_group(pid)
                self._exits[pid] = _GONE_CODE
            self._changed.notify_all()
        self._answers.put({"error": "the fork server is gone"})

    def spawn(self, args: list[str], *, cwd: str, env: dict[str, str], request_r: int, reply_w: int
              ) -> ForkedWorker | None:
        """A worker with ``args`` (but the pipes' fds); None if the server refused or is gone."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            message = json.dumps({"args": args, "cwd": cwd, "home": env["HOME"]}).encode("utf-8")
            with self._send_lock:
                if not self.alive:
                    answer: dict[str, Any] = {"error": "the fork server is gone"}
                else:
                    socket.send_fds(self._control, [message], [out_w, err_w, request_r, reply_w])
                    answer = self._answers.get(timeout=_ANSWER_WAIT_S)
                    if "pid" in answer:
                        with self._changed:
                            self._forked.add(answer["pid"])
                            self.forked_any = True
        except (OSError, queue.Empty):
            answer = {"error": "the fork server did not answer"}
            self.close()
        finally:
            os.close(out_w)
            os.close(err_w)
        if "pid" not in answer:
            os.close(out_r)
            os.close(err_r)
            return None
        return ForkedWorker(answer["pid"], self, os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))

    def exit_code(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits, timeout)
            return self._exits.get(pid)

    def close(self) -> None:
        """Stop the server; the workers it forked are killed (see ``_gone``)."""
        try:
            self._control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
        self._reader.join(5.0)
        self._control.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_servers: dict[tuple[Any, ...], ForkServer] = {}
_unservable: set[tuple[Any, ...]] = set()  # servers that died before forking a worker (say an interpreter
# whose reference_agent has no fork server): those workers start afresh, without a new server tried each time
_servers_lock = threading.Lock()


def _server_key(python: str, env: dict[str, str]) -> tuple[Any, ...]:
    return os.getpid(), python, tuple(sorted((k, v) for k, v in env.items() if k != "HOME"))


def start_worker(python: str, args: list[str], *, cwd: str, env: dict[str, str], request_r: int, reply_w: int
                 ) -> ForkedWorker | None:
    """A warm worker forked from this process's fork server for ``python`` and ``env`` (started if need be, with
    ``env`` but its HOME); None when there is none to be had: the caller starts the worker afresh."""
    if not SUPPORTED:
        return None
    key = _server_key(python, env)
    dead: ForkServer | None = None
    with _servers_lock:
        if key in _unservable:
            return None
        server = _servers.get(key)
        if server is not None and not server.alive:
            dead, server = _servers.pop(key), None
        if server is None:
            try:
                server = _servers[key] = ForkServer(python, env)
            except OSError:
                server = None
    if dead is not None:  # reaped, its socket closed and its folder removed (close_all no longer knows it)
        dead.close()
    if server is None:
        return None
    worker = server.spawn(args, cwd=cwd, env=env, request_r=request_r, reply_w=reply_w)
    if worker is None and not server.forked_any:
        with _servers_lock:
            _unservable.add(key)
    return worker


def reaped_cpu_s() -> float:
    """CPU seconds of the workers this process's fork servers have forked and reaped (``/proc/<server>/stat``'s
    cutime and cstime): what a worker cost, for the benchmark (``bench/executor.py``)."""
    total = 0
    with _servers_lock:
        pids = [s.proc.pid for k, s in _servers.items() if k[0] == os.getpid()]
    for pid in pids:
        fields = proc_stat(pid)
        if fields is not None:
            total += int(fields[13]) + int(fields[14])  # fields 16 and 17 of stat: cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def close_all() -> None:
    """Stop this process's fork servers (at exit, and for tests)."""
    with _servers_lock:
        servers = [s for k, s in _servers.items() if k[0] == os.getpid()]
        _servers.clear()
    for server in servers:
        server.close()
