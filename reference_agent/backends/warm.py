"""Warm Job_B processes on this machine: one per session, kept between the session's blocks.

``LocalJobRunner`` runs a block in a warm process when the request names a
namespace snapshot (the session's REPL). The process keeps the namespace in
memory (``executor/worker.py``), so later blocks skip Python's start-up and the
unpickling, and a lambda or a socket made in one block is there in the next.
It writes the same result JSON and the same snapshot as a one-shot run, so a
warm process that dies costs only what the snapshot cannot hold.

Why one pool per host process with a size cap, not one per runner: runners are
cheap and often never closed (a test builds one per case); the cap bounds how
many idle interpreters this process can leave behind, whoever built them. The
least recently used idle one goes first. A worker also exits by itself after
``idle_s`` without work, and at EOF on its request pipe, that is, when this
process dies, however it dies.

Linux only (``WARM_SUPPORTED``): after each block the processes the code
started are found in /proc and killed, where a one-shot run kills its whole
process group. Elsewhere every run is one-shot.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import IO

from . import forkserver
from .confinement import NO_FOLDERS, BlockFolders, ConfinementPolicy, ProcessConfinement
from .forkserver import ForkedWorker
from .process import CappedBuffer, PipeTap, kill_group, kill_group_except, scrubbed_env

WARM_SUPPORTED = sys.platform.startswith("linux") and os.path.isdir("/proc")
_EXIT_WAIT_S = 5.0  # how long a worker that stopped answering may take to exit before it is killed
_DRAIN_WAIT_S = 2.0  # as the one-shot runner: how long its pipes may take to empty after it died


@dataclass
class BlockRun:
    """How the process fared with one block; the runner reads the result JSON for the rest."""

    returncode: int | None  # the process's exit code, or for a warm block that ran, the one a one-shot run had
    hard_timeout: bool
    stdout: CappedBuffer  # fd-level output, for the result the runner writes when Job_B died
    stderr: CappedBuffer
    mode: str = "warm"  # or "one-shot"
    blocks: int = 1  # blocks this process was given, this one included


class WorkerGone(Exception):
    """The worker was gone before it took the block (it left while idle): nothing ran, so retrying is safe."""


_ACCEPTED = b'{"accepted": true}'


def _read_reply(replies: IO[bytes], future: concurrent.futures.Future[bytes | None]) -> None:
    """The block's answer line; None if the worker never accepted the block, b"" if it died running it."""
    try:
        first = replies.readline()
        line = replies.readline() if first.strip() == _ACCEPTED else None
    except (OSError, ValueError):
        line = b""
    try:
        future.set_result(line)
    except concurrent.futures.InvalidStateError:  # given up at the hard limit: nobody waits for it any more
        pass


def _reply_code(line: bytes) -> int | None:
    try:
        code = json.loads(line).get("code")
    except (ValueError, AttributeError):
        return None
    return code if isinstance(code, int) else None


class WarmExecutor:
    """One ``executor.worker`` process with its own process group, temp cwd and scrubbed environment."""

    def __init__(self, python: str, *, idle_s: float, confinement: ConfinementPolicy | None = None,
                 folders: BlockFolders = NO_FOLDERS) -> None:
        self.workdir = tempfile.mkdtemp(prefix="rlm-jobb-warm-")
        # The worker's own LM bridge port, for all its blocks: its confinement is set once, at start, and lets
        # it connect to this port only (each block's bridge serves on it: LmBridge.start(listener)).
        self.bridge_listener = socket.create_server(("127.0.0.1", 0))
        self.confinement = (ProcessConfinement(confinement, python=python, workdir=self.workdir,
                                               write=folders.write, read=folders.read,
                                               connect_ports=[self.bridge_listener.getsockname()[1]])
                            if confinement is not None else None)
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        args = ["--idle-s", repr(float(idle_s)), *(self.confinement.argv() if self.confinement is not None else ())]
        env = scrubbed_env(self.workdir)
        try:
            # Forked from a server that imported the worker once (~20 ms of CPU for the first block), else started
            # afresh (~140 ms): the same process either way (forkserver.py, bench/executor.py).
            self.proc: subprocess.Popen[bytes] | ForkedWorker = forkserver.start_worker(
                python, args, cwd=self.workdir, env=env, request_r=request_r, reply_w=reply_w) or subprocess.Popen(
                [python, "-s", "-m", "reference_agent.executor.worker", "--request-fd", str(request_r),
                 "--reply-fd", str(reply_w), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.workdir,
                env=env,
                start_new_session=True,
                pass_fds=(request_r, reply_w),
            )
        except BaseException:
            for fd in (request_w, reply_r):
                os.close(fd)
            self._release_host_resources()
            raise
        finally:
            os.close(request_r)
            os.close(reply_w)
        self._requests = request_w
        self._replies = os.fdopen(reply_r, "rb")
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._stdout = PipeTap(self.proc.stdout, name=f"rlm-warm-{self.proc.pid}-stdout")
        self._stderr = PipeTap(self.proc.stderr, name=f"rlm-warm-{self.proc.pid}-stderr")
        self.blocks = 0
        self.busy = False
        self.retired = False  # closed by its runner mid-block: stop it once the block is done

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    async def run_block(self, argv: list[str], *, output_cap: int, hard_limit_s: float) -> BlockRun:
        """Send one block (the one-shot executor's argv) and wait for its result, at most ``hard_limit_s``.

        Raises ``WorkerGone`` if the worker left before it accepted the block (an idle worker may leave just
        as a block is sent): nothing ran, the caller may retry on a new worker.
        """
        out = self._stdout.sink = CappedBuffer(output_cap)
        err = self._stderr.sink = CappedBuffer(output_cap)
        reply: concurrent.futures.Future[bytes | None] = concurrent.futures.Future()
        reader = threading.Thread(target=_read_reply, args=(self._replies, reply), daemon=True)
        try:
            os.write(self._requests, json.dumps(argv).encode("utf-8") + b"\n")
        except BrokenPipeError:
            raise WorkerGone from None
        reader.start()
        self.blocks += 1
        hard_timeout = False
        try:
            line = await asyncio.wait_for(asyncio.wrap_future(reply), hard_limit_s)
        except asyncio.TimeoutError:
            hard_timeout, line = True, b""
            self.kill()
        except BaseException:  # cancelled: the block must not run on unattended
            self.kill()
            raise
        if line is None:
            await self._exit_code()
            raise WorkerGone
        code = _reply_code(line)
        if code is not None:
            self._kill_strays()
            return BlockRun(code, False, out, err, blocks=self.blocks)
        # No answer: the worker died (os._exit, a signal, the stage-2 timeout) or was killed.
        returncode = await self._exit_code()
        await self._drained()
        return BlockRun(returncode, hard_timeout, out, err, blocks=self.blocks)

    def _kill_strays(self) -> None:
        # Repeated: a child may fork while the first pass runs.
        for _ in range(10):
            if not kill_group_except(self.proc.pid, keep=self.proc.pid):
                return

    async def _exit_code(self) -> int | None:
        deadline = time.monotonic() + _EXIT_WAIT_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if self.proc.poll() is None:  # closed its reply pipe but lives on: no use any more
            self.kill()
        kill_group(self.proc.pid)  # what the code started goes with it, as in a one-shot run
        return self.proc.returncode

    async def _drained(self) -> None:
        deadline = time.monotonic() + _DRAIN_WAIT_S
        for tap in (self._stdout, self._stderr):
            while tap.draining and time.monotonic() < deadline:
                await asyncio.sleep(0.005)

    def kill(self) -> None:
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        """Stop the process and everything it started; remove its temp cwd."""
        try:
            os.close(self._requests)  # EOF: an idle worker would leave by itself
        except OSError:
            pass
        self.kill()
        for tap in (self._stdout, self._stderr):
            tap.join(0.5)
        for stream in (self._replies, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._release_host_resources()

    def _release_host_resources(self) -> None:
        self.bridge_listener.close()
        if self.confinement is not None:
            self.confinement.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


class WarmPool:
    """The warm workers of this process, by session key; at most ``max_size`` at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: OrderedDict[str, WarmExecutor] = OrderedDict()

    def acquire(self, key: str, *, python: str, idle_s: float, max_size: int,
                confinement: ConfinementPolicy | None = None, folders: BlockFolders = NO_FOLDERS
                ) -> WarmExecutor | None:
        """The session's worker, marked busy (started if need be); None if the caller should run one-shot."""
        doomed: list[WarmExecutor] = []
        try:
            with self._lock:
                worker = self._workers.get(key)
                if worker is not None and worker.busy:
                    return None  # the session already has a block running: this one runs beside it, one-shot
                if worker is not None and not worker.alive:  # left when idle, or was killed
                    doomed.append(self._workers.pop(key))
                    worker = None
                if worker is None:
                    idle = [k for k, w in self._workers.items() if not w.busy]
                    while len(self._workers) >= max_size and idle:
                        doomed.append(self._workers.pop(idle.pop(0)))
                    if len(self._workers) >= max_size:
                        return None
                    worker = self._workers[key] = WarmExecutor(python, idle_s=idle_s, confinement=confinement,
                                                               folders=folders)
                worker.busy = True
                self._workers.move_to_end(key)
                return worker
        finally:
            for old in doomed:
                old.close()

    def release(self, key: str, worker: WarmExecutor, *, keep: bool) -> None:
        with self._lock:
            worker.busy = False
            if keep and worker.alive and not worker.retired:
                return
            if self._workers.get(key) is worker:
                del self._workers[key]
        worker.close()

    def close(self, keys: set[str] | None = None) -> None:
        """Stop the workers of ``keys`` (all when None); a busy one stops when its block is done."""
        with self._lock:
            mine = [k for k in self._workers if keys is None or k in keys]
            for key in mine:
                self._workers[key].retired = True
            workers = [self._workers.pop(k) for k in mine if not self._workers[k].busy]
        for worker in workers:
            worker.close()

    def __len__(self) -> int:
        return len(self._workers)


# One per process (see the module docstring); closed at exit so no worker outlives a clean shutdown.
POOL = WarmPool()
atexit.register(forkserver.close_all)  # runs after POOL.close (atexit is last in, first out)
atexit.register(POOL.close)
