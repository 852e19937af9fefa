"""``rlm-conformance run -j N``: whole scenarios in N worker processes, results handed back as they finish.

Why processes of the "spawn" context, not fork: the parent has threads (rich's progress bar, logging) and the
harness runs event loops; a forked child would inherit locks held by threads that do not exist in it. Each
worker is started before the parent has loaded the run's profiles or run its preflight (``WorkerPool``: its
~3 s of ADK imports overlap the parent's work), imports the harness once, takes the run over its pipe, then
runs one scenario at a time exactly as ``-j 1`` does in-process
(``run_scenario``, then its snapshot row), so each scenario still has its own temporary work dir, DuckDB
file, volume and warm executor processes, and its ids are seeded by its own name (harness/run/determinism.py),
whatever ran before it in the same worker.

The scenarios are handed out longest expected first (harness/scenario/cost.py), so the last ones to finish are short.

One pipe per worker, one scenario in flight per worker: when a worker dies (a segfault, the OOM killer) the
parent knows which scenario it was running, gives it an ``error`` result naming the exit, starts a fresh
worker and goes on. An exception is that scenario's ``error`` result too, as with ``-j 1``: ``run_one`` turns
what a run raises into one (harness/run/failures.py), the worker what is left (a bug). Ctrl-C (or SIGINT to the
parent alone) interrupts every worker, waits briefly for them to clean up their executor processes, then ends
them.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ..result import ScenarioResult
    from .options import RunOptions
    from ..scenario.models import Scenario

Snapshots = tuple[Path, bool] | None
"""The snapshot folder and whether to update it (``run``), or None (``record``: no snapshot row)."""
STOP_GRACE_S = 5.0


JOBS_VARIABLE = "RLM_CONFORMANCE_JOBS"


def default_jobs() -> int:
    """``-j``'s default: ``$RLM_CONFORMANCE_JOBS`` if set, else one worker per core (``os.cpu_count()``)."""
    value = os.environ.get(JOBS_VARIABLE, "").strip()
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        from ..errors import HarnessError

        raise HarnessError(f"{JOBS_VARIABLE}={value!r} is not a number of worker processes: set it to 1 or more, "
                           f"or unset it to use one per core.")
    return int(value)


def _worker(conn: Connection, log_level: str) -> None:
    """Import the harness, then take the run (``("run", scenarios, options, snapshots)``), then run each scenario
    index the parent sends, send back ``("ok", result)`` — an ``error`` result for an exception out of
    ``run_one`` (which catches what a run raises: what is left is a harness bug). ``None`` ends it at any point."""
    from .failures import error_result, harness_bug
    from .scenario_run import scrubbed, configure_logging, run_one
    from . import model_session  # noqa: F401 - imported before the first scenario, so its duration is its own
    from .runner import run_scenario  # noqa: F401

    configure_logging(log_level)
    try:
        if (run := conn.recv()) is None:  # the parent's preflight failed: nothing to run
            return
        _, scenarios, options, snapshots = run
        while (index := conn.recv()) is not None:
            started = time.perf_counter()
            try:
                result = run_one(scenarios[index], options, snapshots)
            except Exception as exc:  # noqa: BLE001 - a bug: that scenario's error, the others go on
                result = scrubbed(error_result(scenarios[index], options, harness_bug(exc),
                                                time.perf_counter() - started), options)
            conn.send(("ok", result))
    except (KeyboardInterrupt, EOFError, BrokenPipeError):  # Ctrl-C, or the parent went away: stop quietly
        return
    leave_now()


def leave_now() -> None:
    """End a worker told to leave: its ``atexit`` handlers, then ``os._exit(0)``.

    The handlers are the process's clean-up, ours and the target's: the harness's clock folder, the reference
    Job_B's fork server and its folder, whatever a user's agent registered (a telemetry flush, its own temporary
    files); ~10 ms. What ``os._exit`` skips is the interpreter's teardown of ADK, pydantic and the rest of the
    modules (~0.4 s that the parent would wait for after the last result). What the handlers miss in the worker's
    temporary folder the parent removes with the folder (``spawn_worker``); what they do elsewhere (a flush, a
    child process stopped) only they do.
    """
    import atexit

    atexit._run_exitfuncs()  # what a normal exit runs first (CPython's; there is no public name for it)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@dataclass
class WorkerProcess:
    """One spawned worker, its pipe, its temporary folder and the scenario it runs (explore's pool,
    harness/explore/pool.py, too)."""

    process: BaseProcess
    conn: Connection
    temp_folder: str
    index: int | None = None  # the scenario it is running
    started: float = 0.0

    def ended(self) -> None:
        """After the process is gone (joined): close the pipe and remove the worker's temporary folder, with what
        a worker that was killed or interrupted left in it (a scenario's work folder, the clock's, Job_B's)."""
        self.conn.close()
        shutil.rmtree(self.temp_folder, ignore_errors=True)


@dataclass(frozen=True)
class Died:
    """What a worker that died while busy sends instead of its answer: why (``death_reason``)."""

    reason: str


def finished(workers: Sequence[WorkerProcess]) -> Iterator[tuple[WorkerProcess, object]]:
    """Wait until at least one busy worker (``index`` set) has answered or died; yield ``(worker, its message)``
    for each, or ``(worker, Died(...))`` for one that died (joined already: the caller replaces it and calls
    ``ended``). The one wait/receive/death loop of both pools: ``run -j`` here, ``explore -j`` (harness/explore/)."""
    busy = [w for w in workers if w.index is not None]
    ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
    for worker in busy:
        if worker.conn in ready:
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):  # died while sending: handled as a death below
                pass
            else:
                yield worker, message
                continue
        if worker.process.sentinel in ready or not worker.process.is_alive():
            worker.process.join()
            yield worker, Died(death_reason(worker.process.exitcode))


def spawn_worker(context: multiprocessing.context.SpawnContext, target: Callable[..., None], args: tuple,
                 *, name: str) -> WorkerProcess:
    """Start ``target(conn, *args)`` in a process of ``context``, with a temporary folder of its own.

    The parent makes the folder and removes it once the worker is gone (``WorkerProcess.ended``): a worker's exit
    handlers remove what it made, but a worker killed (a segfault, the OOM killer, the dying-worker tests) or
    interrupted (Ctrl-C, explore's runs ahead that are no longer needed) may not run them, and only the parent
    knows where to look. The worker's ``TMPDIR`` is that folder, for its own temporary files and its children's
    (the executor's)."""
    folder = tempfile.mkdtemp(prefix="rlm-worker-")  # the prefix harness/snapshot/normalize.py knows
    parent, child = context.Pipe()
    process = context.Process(target=_in_temp_folder, args=(folder, target, child, *args), name=name, daemon=True)
    try:
        process.start()
    except BaseException:
        parent.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        child.close()
    return WorkerProcess(process, parent, folder)


def _in_temp_folder(folder: str, target: Callable[..., None], *args: object) -> None:
    # The parent still ends the worker with itself (it is daemonic there); inside, the target may start processes of
    # its own: ADK 1.x's UnsafeLocalCodeExecutor runs each code block in a multiprocessing child, which a daemonic
    # process may not have ("daemonic processes are not allowed to have children").
    multiprocessing.current_process().daemon = False
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder  # in case something of the start-up asked tempfile already
    target(*args)


class WorkerPool:
    """``jobs`` worker processes, started before the parent knows what they will run.

    A worker spends its first ~3 s importing ADK, google-genai and the harness; the parent, meanwhile, loads the
    scenarios, reads the profiles and runs its preflight (none of which imports ADK), then hands the run over
    (``run``). A preflight that fails ``close``s the pool: the workers leave without running anything.
    """

    def __init__(self, jobs: int, *, log_level: str = "error") -> None:
        self._context = multiprocessing.get_context("spawn")
        self._log_level = log_level
        self._workers: list[WorkerProcess] = []
        self.size = max(1, jobs)
        self._handed_over = False
        try:
            for _ in range(self.size):
                self._workers.append(self._start())
        except BaseException:
            self.close()
            raise

    def _start(self) -> WorkerProcess:
        return spawn_worker(self._context, _worker, (self._log_level,), name="rlm-conformance-worker")

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._handed_over:  # still importing, nothing of a run started in them: no need to wait
            for worker in self._workers:
                worker.process.terminate()
        stop_workers(self._workers)
        self._workers = []

    def run(self, scenarios: Sequence[Scenario], options: RunOptions, *, snapshots: Snapshots,
            crashed: Callable[[Scenario, str, float], ScenarioResult]) -> Iterator[tuple[int, ScenarioResult]]:
        """Yield ``(index, result)`` for every scenario as it finishes (in finishing order; the caller orders them).

        ``crashed(scenario, reason, duration)`` builds the ``error`` result of a scenario whose worker died. The
        pool is spent afterwards (its workers have left): one pool, one run. The workers share one session-service
        probe per kind of service (harness/run/probe_share.py): a result whose probe another worker ran comes once
        that record is there.
        """
        from .probe_share import PendingProbes  # the trace model (~0.25 s): not before the workers have started

        self._handed_over = True
        with tempfile.TemporaryDirectory(prefix="rlm-conformance-probes-") as share:
            probes = PendingProbes(share)
            for index, result in self._results(scenarios, dataclasses.replace(options, probe_share=share),
                                               snapshots, crashed):
                yield from probes.settle(index, result, scenarios[index])
            yield from probes.finish()

    def _results(self, scenarios: Sequence[Scenario], options: RunOptions, snapshots: Snapshots,
                 crashed: Callable[[Scenario, str, float], ScenarioResult]) -> Iterator[tuple[int, ScenarioResult]]:
        from ..scenario.cost import longest_first

        pending = longest_first(scenarios)[::-1]  # popped from the end: the longest expected first
        setup = ("run", scenarios, options, snapshots)
        workers = self._workers

        def feed(worker: WorkerProcess, *messages: object) -> None:
            """Send ``messages`` and the next scenario (or ``None``: leave). A worker that died before reading
            them is seen by its sentinel below, as a death while running that scenario."""
            if pending:
                worker.index, worker.started = pending.pop(), time.perf_counter()
            else:  # nothing left for it: let it exit now, while the others finish
                worker.index = None
            try:
                for message in (*messages, worker.index):
                    worker.conn.send(message)
            except OSError:
                pass

        try:
            for worker in workers:
                feed(worker, setup)
            while any(w.index is not None for w in workers):
                for worker, message in finished(workers):
                    index = worker.index
                    assert index is not None
                    if not isinstance(message, Died):
                        _, payload = message
                        yield index, payload
                        feed(worker)
                        continue
                    yield index, crashed(scenarios[index], message.reason, time.perf_counter() - worker.started)
                    worker.ended()
                    if pending:  # a replacement only when a scenario is left for it
                        workers[workers.index(worker)] = fresh = self._start()
                        feed(fresh, setup)
                    else:
                        worker.index = None
        finally:
            self.close()


def run_parallel(scenarios: Sequence[Scenario], options: RunOptions, jobs: int, *, snapshots: Snapshots,
                 log_level: str = "error", crashed: Callable[[Scenario, str, float], ScenarioResult]
                 ) -> Iterator[tuple[int, ScenarioResult]]:
    """``WorkerPool(...).run(...)`` in one call, for a caller with nothing to do while the workers start."""
    pool = WorkerPool(min(jobs, len(scenarios)), log_level=log_level)
    yield from pool.run(scenarios, options, snapshots=snapshots, crashed=crashed)


def death_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        how = f"was killed by {name}"
    else:
        how = f"exited with code {exitcode}"
    return (f"the worker process running this scenario {how} before it finished (a crash of the interpreter "
            f"or a native library, or the out-of-memory killer); the other scenarios went on. Run it alone with "
            f"-j 1 to see the crash.")


def stop_workers(workers: list[WorkerProcess]) -> None:
    """Stop every worker: ask the idle ones to leave, interrupt the busy ones, then end what is left."""
    for worker in workers:
        if not worker.process.is_alive():
            continue
        try:
            if worker.index is None:
                worker.conn.send(None)  # a second None (feed may have sent one) is never read: harmless
            elif worker.process.pid is not None:
                os.kill(worker.process.pid, signal.SIGINT)  # KeyboardInterrupt: its finally blocks clean up
        except OSError:
            pass
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.process.join(max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.terminate()
            worker.process.join(1.0)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.ended()
