"""Job runners: run Job_B (``reference_agent.executor``) for one artifact and hand back its result path.

``LocalJobRunner`` runs it as a subprocess on this machine and is the host side
of the LM bridge: the executor's ``llm_query`` prompts come back over a local
TCP socket and are answered here with the caller's ``sub_lm``, so every model
call happens in this process (recordable, replayable, countable).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

from ..executor.result import (
    EXECUTOR_TIMEOUT_GRACE_S,
    STATUSES,
    result_volume_path,
    runner_result,
    write_json_atomic,
)
from .claims import drop_claim, live_claim, wait_for_claimed_run, write_claim
from .confinement import (
    DEFAULT_CONFINEMENT,
    ConfinementPolicy,
    ProcessConfinement,
    BlockFolders,
    confinement_support,
)
from .idempotency import adoptable, adopted_state
from .process import CappedBuffer, kill_group, scrubbed_env
from .volume import LocalVolumeStore
from .warm import POOL, WARM_SUPPORTED, BlockRun, WorkerGone

SubLm = Callable[[str], Awaitable[str]]


class SubLmAnswer(str):
    """A sub-LM answer that also carries the tokens the model reported for the call (prompt + answer)."""

    tokens: int | None

    def __new__(cls, text: str, *, tokens: int | None = None) -> "SubLmAnswer":
        answer = super().__new__(cls, text)
        answer.tokens = tokens
        return answer

_BRIDGE_LINE_LIMIT = 256 * 1024 * 1024  # one request line may carry a large context slice


@dataclass(frozen=True)
class JobRequest:
    artifact_path: str  # volume path of the code
    run_id: str
    iteration: int
    context_path: str | None = None  # volume path of the JSON given to the code as `context`
    timeout_s: float = 30.0
    output_cap_bytes: int = 1_000_000
    max_sublm_calls: int = 64
    namespace_path: str | None = None  # volume path of the REPL namespace snapshot (variables persist)
    max_sublm_tokens: int | None = None  # what is left of the session's sub-LM token budget (None: no cap)
    # The delegation this run executes (the artifact id): set, a retry of it adopts the result an earlier attempt
    # wrote and a Databricks submit carries an idempotency token (idempotency.py); None, every run runs the code.
    delegation_id: str | None = None


@dataclass(frozen=True)
class JobOutcome:
    result_json_path: str  # volume path of result_{run_id}_iter{n}.json
    run_url: str | None
    # How the job itself went, in Databricks result_state terms: SUCCESS | FAILED | TIMEDOUT.
    # SUCCESS means Job_B wrote its result; the code's own status is in the result JSON.
    runner_state: str
    message: str


@runtime_checkable
class JobRunner(Protocol):
    async def run(self, request: JobRequest, *, sub_lm: SubLm) -> JobOutcome: ...


class LmBridge:
    """Host side of the LM bridge: newline-delimited JSON over TCP on 127.0.0.1."""

    def __init__(self, sub_lm: SubLm, *, max_calls: int, max_tokens: int | None = None) -> None:
        self._sub_lm = sub_lm
        self._max_calls = max_calls
        self._max_tokens = max_tokens
        self._used = 0
        self.tokens_used = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        # Host-side view of every call, used when the runner must write the result itself.
        self.calls: list[dict[str, Any]] = []

    async def start(self, listener: socket.socket | None = None) -> str:
        """Serve on a new port of 127.0.0.1, or on ``listener`` (a warm worker's own port, which its confinement
        lets it reach; the bridge serves a duplicate, so closing the bridge leaves the worker's port open)."""
        if listener is not None:
            self._server = await asyncio.start_server(self._serve, sock=listener.dup(), limit=_BRIDGE_LINE_LIMIT)
        else:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_BRIDGE_LINE_LIMIT)
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        lock = asyncio.Lock()
        try:
            while line := await reader.readline():
                task = asyncio.create_task(self._answer(line, writer, lock))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def reply(self, message: Any) -> dict[str, Any]:
        """The reply to one request object ``{"id", "prompts"}``: what goes back over the socket, and what the
        Databricks job runner uploads as the answer file of Job_B's sub-LM exchange."""
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            prompts = message.get("prompts") if isinstance(message, dict) else None
            if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
                raise ValueError("request needs 'prompts': a list of strings")
            responses, tokens = await self._complete(prompts)
            return {"id": request_id, "responses": responses, "tokens": tokens}
        except _BridgeError as exc:
            return {"id": request_id, "error": str(exc)}
        except ValueError as exc:
            return {"id": request_id, "error": f"bad request: {exc}"}

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter, lock: asyncio.Lock) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            reply: dict[str, Any] = {"id": None, "error": f"bad request: {exc}"}
        else:
            reply = await self.reply(message)
        async with lock:
            try:
                writer.write(json.dumps(reply).encode("utf-8") + b"\n")
                await writer.drain()
            except ConnectionError:
                pass

    async def _complete(self, prompts: list[str]) -> tuple[list[str], list[int | None]]:
        # Enforced here too: analyst code could talk to the socket without the client's budget check.
        if self._used + len(prompts) > self._max_calls:
            raise _BridgeError(f"sub-LM budget exceeded: at most {self._max_calls} sub-LM calls per run")
        if self._max_tokens is not None and self.tokens_used >= self._max_tokens:
            raise _BridgeError(f"sub-LM token budget exhausted: {self.tokens_used} of the {self._max_tokens} tokens "
                               f"left for this session are used; answer with what you have")
        self._used += len(prompts)
        started = time.perf_counter()
        outcomes = await asyncio.gather(*(self._sub_lm(p) for p in prompts), return_exceptions=True)
        latency = round(time.perf_counter() - started, 6)
        failures = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
        error = None
        if failures:
            i, exc = failures[0]
            where = f"prompt {i + 1} of {len(prompts)}" if len(prompts) > 1 else "the prompt"
            error = f"{where} failed: {type(exc).__name__}: {exc}"
        for prompt, outcome in zip(prompts, outcomes):
            self.calls.append(
                {
                    "index": len(self.calls),
                    "batched": len(prompts) > 1,
                    "batch_size": len(prompts),
                    "latency_s": latency,
                    "prompt_chars": len(prompt),
                    "response_chars": None if isinstance(outcome, BaseException) else len(str(outcome or "")),
                    "tokens": None if isinstance(outcome, BaseException) else getattr(outcome, "tokens", None),
                    "error": error,
                }
            )
        if error is not None:
            cancelled = [o for _, o in failures if isinstance(o, asyncio.CancelledError)]
            if cancelled:
                raise cancelled[0]
            raise _BridgeError(error)
        tokens = [getattr(o, "tokens", None) for o in outcomes]
        self.tokens_used += sum(t for t in tokens if t)
        return ["" if o is None else str(o) for o in outcomes], tokens


class _BridgeError(Exception):
    pass


def _read_result(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("status") not in STATUSES:
        return None
    return data


class LocalJobRunner:
    """Job_B as a local process: own process group, private temp cwd, scrubbed environment, hard timeout.

    A request that names a namespace snapshot (a session's REPL) runs in that
    session's warm process (``warm.py``) when ``warm`` is on; any other request,
    or one the pool cannot take, runs in a one-shot process. Both leave the same
    result JSON and snapshot.
    """

    def __init__(self, volume: LocalVolumeStore, python: str = sys.executable, *, grace_s: float = 5.0,
                 warm: bool = True, idle_s: float = 300.0, max_warm: int = 4,
                 confinement: ConfinementPolicy = DEFAULT_CONFINEMENT) -> None:
        # The hard limit must leave the executor time to act on its own two-stage soft timeout.
        if grace_s <= EXECUTOR_TIMEOUT_GRACE_S:
            raise ValueError(f"grace_s must exceed the executor's own grace of {EXECUTOR_TIMEOUT_GRACE_S} s")
        self.volume = volume
        self.python = python
        self.grace_s = grace_s
        self.warm = warm and WARM_SUPPORTED and max_warm > 0
        self.idle_s = idle_s
        self.max_warm = max_warm
        self.confinement = confinement
        # What this machine can give Job_B (said once per process when a protection is missing; raises
        # ConfinementUnavailable here, before any code runs, when the policy requires one that is missing).
        self.confinement_status = confinement_support(confinement) if confinement.enabled else None
        self._warm_keys: set[str] = set()

    def _local(self, volume_path: str) -> Path:
        local = self.volume.local_path(volume_path)
        if local is None:
            raise ValueError(f"{volume_path!r} has no local file; LocalJobRunner needs a local volume")
        return local

    def close(self) -> None:
        """Stop this runner's warm processes (the pool also stops them when idle, and at exit)."""
        POOL.close(self._warm_keys)
        self._warm_keys.clear()

    async def run(self, request: JobRequest, *, sub_lm: SubLm) -> JobOutcome:
        artifact = self._local(request.artifact_path)
        result_path_v = result_volume_path(request.artifact_path, request.run_id, request.iteration)
        result_path = self._local(result_path_v)
        if request.delegation_id and live_claim(result_path) is not None:
            # An earlier attempt's Job_B still runs (its agent died): its result, not a second run.
            await wait_for_claimed_run(result_path, limit_s=request.timeout_s + self.grace_s)
        earlier = _read_result(result_path)
        if adoptable(earlier, artifact_path=request.artifact_path, delegation_id=request.delegation_id):
            # This delegation already ran (a crash after Job_B, before its summary): its result, not a second run.
            return JobOutcome(result_path_v, None, adopted_state(earlier),
                              f"Job_B result of an earlier attempt adopted; code status {earlier['status']}")
        # A stale result from an earlier attempt must never pass for this run's.
        result_path.unlink(missing_ok=True)

        bridge = LmBridge(sub_lm, max_calls=request.max_sublm_calls, max_tokens=request.max_sublm_tokens)
        # The block's volume folders: the code's inputs and what the executor writes (result, snapshot).
        folders = BlockFolders.of(str(artifact), str(result_path),
                                  request.namespace_path and str(self._local(request.namespace_path)),
                                  context=request.context_path and str(self._local(request.context_path)))
        started = time.perf_counter()
        claim = result_path if request.delegation_id else None  # where the block's process group is named
        try:
            ran = None
            if self.warm and request.namespace_path:
                ran = await self._run_warm(request, artifact, bridge, folders,
                                           key=f"{self.python}\0{self._local(request.namespace_path)}", claim=claim)
            if ran is None:
                address = await bridge.start()
                ran = await self._run_one_shot(self._executor_argv(request, artifact, address), request,
                                               folders=folders, bridge_port=int(address.rsplit(":", 1)[1]),
                                               claim=claim)
        finally:
            await bridge.close()
            if claim is not None:
                drop_claim(claim)
        duration = round(time.perf_counter() - started, 6)

        returncode = ran.returncode
        result = _read_result(result_path)
        if result is not None:
            state = "TIMEDOUT" if ran.hard_timeout else ("SUCCESS" if returncode == 0 else "FAILED")
            return JobOutcome(result_path_v, None, state, f"Job_B finished (exit {returncode}); code status {result['status']}")

        result = runner_result(run_id=request.run_id, iteration=request.iteration, artifact=artifact,
                               returncode=returncode, hard_timeout=ran.hard_timeout, timeout_s=request.timeout_s,
                               grace_s=self.grace_s, duration_s=duration, stdout=ran.stdout, stderr=ran.stderr)
        result["sublm_calls"] = bridge.calls
        result["executor_process"] = {"mode": ran.mode, "blocks": ran.blocks}
        write_json_atomic(result_path, result)
        return JobOutcome(result_path_v, None, "TIMEDOUT" if ran.hard_timeout else "FAILED", result["error"]["message"])

    def _executor_argv(self, request: JobRequest, artifact: Path, address: str) -> list[str]:
        """The executor's arguments: the command line of a one-shot run, the request line of a warm one."""
        argv = [
            "--artifact-path", str(artifact),
            "--run-id", request.run_id,
            "--iteration", str(request.iteration),
            "--lm-address", address,
            "--timeout", repr(float(request.timeout_s)),
            "--output-cap", str(request.output_cap_bytes),
            "--max-sublm-calls", str(request.max_sublm_calls),
        ]
        if request.context_path:
            argv += ["--context-path", str(self._local(request.context_path))]
        if request.namespace_path:
            argv += ["--namespace-path", str(self._local(request.namespace_path))]
        return argv

    async def _run_warm(self, request: JobRequest, artifact: Path, bridge: LmBridge, folders: BlockFolders, *,
                        key: str, claim: Path | None = None) -> BlockRun | None:
        """The block in the session's warm process; None when the pool has none to give (run one-shot)."""
        confinement = self.confinement if self.confinement.enabled else None
        for _ in range(2):  # a worker that left while idle is found out only when it is sent a block: one retry
            worker = POOL.acquire(key, python=self.python, idle_s=self.idle_s, max_size=self.max_warm,
                                  confinement=confinement, folders=folders)
            if worker is None:
                return None
            self._warm_keys.add(key)
            ran, keep = None, False
            try:
                # The worker's own bridge port: the only one its confinement lets it connect to.
                address = await bridge.start(worker.bridge_listener)
                if claim is not None:
                    write_claim(claim, worker.proc.pid)  # the warm worker leads its own process group
                ran = await worker.run_block(self._executor_argv(request, artifact, address),
                                             output_cap=request.output_cap_bytes,
                                             hard_limit_s=request.timeout_s + self.grace_s)
                keep = not ran.hard_timeout and worker.alive
            except WorkerGone:
                await bridge.close()
                continue
            finally:
                POOL.release(key, worker, keep=keep)
            return ran
        return None

    async def _run_one_shot(self, argv: list[str], request: JobRequest, *, folders: BlockFolders,
                            bridge_port: int, claim: Path | None = None) -> BlockRun:
        out, err = CappedBuffer(request.output_cap_bytes), CappedBuffer(request.output_cap_bytes)
        workdir = tempfile.mkdtemp(prefix="rlm-jobb-")
        hard_timeout = False
        proc: asyncio.subprocess.Process | None = None
        confinement = (ProcessConfinement(self.confinement, python=self.python, workdir=workdir,
                                          write=folders.write, read=folders.read, connect_ports=[bridge_port])
                       if self.confinement.enabled else None)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.python, "-s", "-m", "reference_agent.executor", *argv, *(confinement.argv() if confinement else ()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=scrubbed_env(workdir),
                start_new_session=True,
            )
            assert proc.stdout is not None and proc.stderr is not None
            if claim is not None:
                write_claim(claim, proc.pid)  # start_new_session: the child leads its own process group
            drains = [asyncio.create_task(out.drain(proc.stdout)), asyncio.create_task(err.drain(proc.stderr))]
            try:
                await asyncio.wait_for(proc.wait(), timeout=request.timeout_s + self.grace_s)
            except asyncio.TimeoutError:
                hard_timeout = True
                kill_group(proc.pid)
                await proc.wait()
            # Whatever the code started in its group goes too; it could hold the pipes open.
            kill_group(proc.pid)
            _, pending = await asyncio.wait(drains, timeout=2.0)
            for task in pending:
                task.cancel()
        except BaseException:
            if proc is not None and proc.returncode is None:
                kill_group(proc.pid)
            raise
        finally:
            if confinement is not None:
                confinement.close()
            shutil.rmtree(workdir, ignore_errors=True)
        return BlockRun(proc.returncode, hard_timeout, out, err, mode="one-shot")
