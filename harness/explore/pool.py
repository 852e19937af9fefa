"""``explore -j N``: generated conversations run in N worker processes, ahead of the search that asks for them.

The search stays one sequential, deterministic loop (engine.py): it asks for the verdict of one plan at a time, in
the order ``-j 1`` would. The pool only makes verdicts ready before they are asked for: the engine hands it the
plans it can predict (the round's coming examples with ``ahead``, the structural shrinker's next candidates with
``soon``), and a plan it needs now with ``get``, which goes first. A verdict nobody asks for is simply
never used, so ``-j 2`` finds what ``-j 1`` finds, from the same runs counted the same way; only the wall time
differs.

Workers are processes of the "spawn" context, for the reasons harness/run/pool.py (``run -j``) gives, and are
stopped the same way (its ``stop_workers``); each runs one scenario at a time through ``run_scenario`` and sends back only
its ``Verdict`` (findings.py), not the whole trace. A worker that dies gives its plan a discarded verdict naming the
exit, and a fresh worker takes its place.
"""

from __future__ import annotations

import collections
import multiprocessing
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from .findings import Verdict, judge

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from ..run.options import RunOptions
    from ..scenario.models import Scenario
    from ..run.pool import WorkerProcess

Run = Callable[["Scenario", "RunOptions"], "ScenarioResult"]


def run_scenario(scenario: Scenario, options: RunOptions) -> ScenarioResult:
    """The pipeline of ``run`` (looked up at call time, so a test can stand in for it in this process); a crash
    example (``explore --crash``) killed at its point and recovered."""
    if scenario.crash is not None:
        from .crash_example import run_crash_example

        return run_crash_example(scenario, options)
    from ..run import runner

    return runner.run_scenario(scenario, options)


def _serve(conn: Connection, options: RunOptions, checks: frozenset[str], run: Run, log_level: str,
           timeout_s: float | None = None) -> None:
    """A worker: judge every ``(key, scenario)`` the parent sends until it sends None; past ``timeout_s`` on one,
    dump every thread's stack into its temporary folder and end (hang.py)."""
    import os
    import tempfile

    from ..run.pool import leave_now
    from ..run.scenario_run import configure_logging
    from .hang import DUMP_NAME, watched

    configure_logging(log_level)
    if timeout_s is not None:  # the imports (seconds, the first time) are the worker's start, not an example's time
        _warm(options)
    dump = open(os.path.join(tempfile.gettempdir(), DUMP_NAME), "w+", encoding="utf-8")  # noqa: SIM115
    try:
        while (job := conn.recv()) is not None:
            key, scenario = job
            with watched(dump, timeout_s):
                verdict = judge(run(scenario, options), checks)
            conn.send((key, verdict))
    except (KeyboardInterrupt, EOFError, BrokenPipeError):  # Ctrl-C, or the parent went away: stop quietly
        return
    leave_now()  # as harness/run/pool.py's workers: the exit handlers, not the interpreter's slow teardown


def _warm(options: RunOptions) -> None:
    """Import the pipeline and the target (a target that does not import fails its example as it would)."""
    from ..run import runner  # noqa: F401
    from ..errors import HarnessError
    from ..targets.registry import resolve_target

    try:
        resolve_target(options.target)
    except HarnessError:
        pass


class Pool:
    """Workers and three queues, served in order: ``get`` (needed now), ``soon`` (the shrinker's next candidates:
    each call replaces the last, whose candidates went stale) and ``ahead`` (the round's coming examples)."""

    def __init__(self, options: RunOptions, checks: frozenset[str], jobs: int, *, run: Run = run_scenario,
                 log_level: str = "error", timeout_s: float | None = None) -> None:
        self._args = (options, checks, run, log_level, timeout_s)
        self.timeout_s = timeout_s  # a run past it: the worker ends itself, the verdict is target_hung (hang.py)
        self._context = multiprocessing.get_context("spawn")
        self._now: collections.deque[tuple[str, Scenario]] = collections.deque()
        self._soon: collections.deque[tuple[str, Scenario]] = collections.deque()
        self._later: collections.deque[tuple[str, Scenario]] = collections.deque()
        self._busy: dict[int, str] = {}  # worker slot -> the key of the plan it runs
        self._ready: dict[str, Verdict] = {}
        self.runs = 0  # runs started: those the search asked for and those nobody did
        self._deaths = 0  # workers dead in a row, without a verdict between
        self._workers: list[WorkerProcess] = [self._start() for _ in range(jobs)]

    def _start(self) -> WorkerProcess:
        from ..run.pool import spawn_worker

        return spawn_worker(self._context, _serve, self._args, name="rlm-conformance-explore")

    def _known(self, key: str) -> bool:
        return key in self._ready or key in self._busy.values() or any(
            k == key for lane in (self._now, self._soon, self._later) for k, _ in lane)

    def ahead(self, jobs: Iterable[tuple[str, Scenario]]) -> None:
        """Run these when nothing more pressing waits, in this order, after those queued already."""
        self._later.extend(job for job in jobs if not self._known(job[0]))
        self._feed()

    def soon(self, jobs: Iterable[tuple[str, Scenario]]) -> None:
        """Run these before anything ``ahead``, instead of what ``soon`` was given last."""
        self._soon.clear()
        self._soon.extend(job for job in jobs if not self._known(job[0]))
        self._feed()

    def drop_ahead(self) -> None:
        """Forget what ``soon`` and ``ahead`` queued and no worker started."""
        self._soon.clear()
        self._later.clear()

    def get(self, key: str, scenario: Scenario) -> Verdict:
        """The verdict of ``scenario``, run next unless it is running or done already."""
        if key not in self._ready and key not in self._busy.values():
            for lane in (self._soon, self._later):
                for job in [j for j in lane if j[0] == key]:
                    lane.remove(job)
            self._now.append((key, scenario))
            self._feed()
        while key not in self._ready:
            self._collect()
        return self._ready.pop(key)

    def _feed(self) -> None:
        for slot, worker in enumerate(self._workers):
            lane = self._now or self._soon or self._later
            if slot not in self._busy and lane:
                job = lane.popleft()
                self._busy[slot] = job[0]
                self.runs += 1
                worker.index, worker.started = slot, time.perf_counter()
                worker.conn.send(job)

    def _collect(self) -> None:
        """Wait for at least one worker to finish (or die), keep its verdict, give it the next job."""
        from ..run.pool import Died, finished
        from .hang import hung_verdict

        for worker, message in finished(self._workers):
            slot = worker.index
            assert slot is not None
            if not isinstance(message, Died):
                key, verdict = message
                self._ready[key] = verdict
                del self._busy[slot]
                worker.index, self._deaths = None, 0
                continue
            if (hung := hung_verdict(worker.temp_folder, self.timeout_s)) is not None:  # not a crash
                self._ready[self._busy.pop(slot)] = hung
                self._deaths = 0
            else:
                self._deaths += 1
                if self._deaths > len(self._workers):  # not one plan's crash: the workers cannot run at all
                    raise HarnessError(f"explore -j: every worker process died before it could run a conversation "
                                       f"(the last {message.reason.split(' (')[0]}). Run with -j 1 to see why.")
                self._ready[self._busy.pop(slot)] = Verdict(discarded=message.reason[:200])
            worker.ended()
            self._workers[slot] = self._start()
        self._feed()

    def close(self) -> None:
        from ..run.pool import stop_workers

        for slot, worker in enumerate(self._workers):
            worker.index = slot if slot in self._busy else None
        stop_workers(self._workers)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
