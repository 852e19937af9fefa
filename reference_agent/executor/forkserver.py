"""A fork server for warm Job_B workers: one process that has imported the worker, forking one worker per session.

A warm worker started with ``python -m reference_agent.executor.worker`` spends ~100 ms of CPU on Python's start
and the executor's imports before it serves its first block; a host that runs many short sessions (the conformance
harness: one or more per scenario) pays that per session. This process pays it once: the host
(``reference_agent.backends.forkserver``) starts it with the workers' environment and asks it for workers, and
each is ``fork()`` of it that then becomes exactly what ``python -s -m reference_agent.executor.worker ARGS`` in the
worker's folder would be: its own session and process group, stdin on /dev/null, stdout and stderr on the host's
pipes, the worker's folder as cwd and ``sys.path[0]``, its HOME, and the worker module run as ``__main__`` by
runpy, as ``-m`` runs it.

``python -m reference_agent.executor.forkserver --control-fd N`` serves the AF_UNIX SOCK_SEQPACKET socket N. The host
sends one JSON message per worker — ``{"args": [...], "cwd": ..., "home": ...}`` with four fds
attached (SCM_RIGHTS): stdout, stderr, the request pipe's read end and the reply pipe's write end; ``args`` are the
worker's arguments but ``--request-fd``/``--reply-fd``, which name the fds as the worker gets them. The server answers
``{"pid": n}`` (or ``{"error": text}``) and, when a worker exits, ``{"exited": pid, "code": n}`` with ``n`` as
``subprocess.Popen.returncode`` gives it (``-signal`` for a signal). It exits at EOF on the socket (the host is gone):
its workers see EOF on their own request pipes and leave too.

The server starts with the workers' environment (but HOME), so a ``sitecustomize`` on their PYTHONPATH runs once,
in the server, as every other start-up step does: set-up that must happen in each process belongs in an
``os.register_at_fork(after_in_child=...)`` hook (the conformance harness's clock reads its instant there).
Stdlib only, like the rest of the executor.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import sys
import threading
from typing import Any

# What the worker imports (``worker.py``; ``confine`` lazily, when confined): imported here, once, for every worker.
from . import confine as _confine  # noqa: F401
from . import main as _job_b_main  # noqa: F401
from . import namespace as _namespace  # noqa: F401

WORKER_MODULE = "reference_agent.executor.worker"
_MAX_MESSAGE = 1 << 20  # a confinement spec is a few kB
_FDS_PER_WORKER = 4


def _become_worker(request: dict[str, Any], fds: list[int], control: socket.socket, wakeup: tuple[int, int]) -> int:
    """In the forked child: set the process up as a fresh ``python -s -m worker`` would be, run the worker."""
    import runpy

    control.close()
    signal.set_wakeup_fd(-1)
    for fd in wakeup:
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the code's own subprocesses must be waitable
    os.setsid()
    stdout, stderr, request_r, reply_w = fds
    devnull = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((devnull, 0), (stdout, 1), (stderr, 2)):
        os.dup2(source, target)
        os.close(source)
    cwd = request["cwd"]
    os.chdir(cwd)
    os.environ["HOME"] = request["home"]
    sys.path[0] = cwd
    sys.argv = [WORKER_MODULE, "--request-fd", str(request_r), "--reply-fd", str(reply_w), *request["args"]]
    runpy.run_module(WORKER_MODULE, run_name="__main__", alter_sys=True)  # the worker's __main__ os._exits
    return 1


def _spawn(message: bytes, fds: list[int], control: socket.socket, wakeup: tuple[int, int]) -> dict[str, Any]:
    try:
        request = json.loads(message)
        if len(fds) != _FDS_PER_WORKER:
            raise ValueError(f"a worker needs {_FDS_PER_WORKER} fds, got {len(fds)}")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _become_worker(request, fds, control, wakeup)
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        return {"pid": pid}
    except (ValueError, KeyError, TypeError, OSError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        for fd in fds:
            os.close(fd)


def _reap(control: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        control.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode("utf-8"))


def serve(control_fd: int) -> int:
    control = socket.socket(fileno=control_fd)
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    signal.set_wakeup_fd(wakeup_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so SIGCHLD reaches the wakeup fd
    assert threading.active_count() == 1, "fork() from a process with threads"
    try:
        while True:
            ready, _, _ = select.select([control, wakeup_r], [], [])
            if wakeup_r in ready:
                os.read(wakeup_r, 4096)
                _reap(control)
            if control in ready:
                message, fds, _, _ = socket.recv_fds(control, _MAX_MESSAGE, _FDS_PER_WORKER + 4)
                if not message:
                    return 0  # the host is gone
                control.send(json.dumps(_spawn(message, fds, control, (wakeup_r, wakeup_w))).encode("utf-8"))
    except (BrokenPipeError, ConnectionResetError):
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_agent.executor.forkserver", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--control-fd", type=int, required=True, help="the AF_UNIX SOCK_SEQPACKET socket to serve")
    return serve(parser.parse_args(argv).control_fd)


if __name__ == "__main__":
    sys.exit(main())
