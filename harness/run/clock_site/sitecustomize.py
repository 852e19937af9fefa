"""The scenario's wall clock in every Python process the target starts, and the arithmetic both sides share.

While a scenario runs under the harness's clock (``harness/run/clock.py``), the harness writes a folder holding this
file and ``clock.json`` and puts it first on ``PYTHONPATH``; ``site`` then imports it, as ``sitecustomize``, in
each Python process the target starts that keeps ``PYTHONPATH`` (a REPL worker, Job_B's executor), before any of
the process's own code. It reads ``clock.json`` once, there — ``{"instant_ns": ..., "step_ns": ...}``: the
harness's clock at its latest model exchange — and travels there with time-machine: ``time.time()``,
``datetime.now()`` and the rest start at that instant and advance as ``advanced_ns`` says (real speed at first,
never a whole step); the time zone is UTC. ``time.monotonic()`` and ``time.perf_counter()`` stay real. The
process does not see the harness's later exchanges: its clock is the one it started with. A process forked from
it starts anew, as if it had started then: it reads ``clock.json`` again (``_restart``).

It needs nothing but the standard library and time-machine: where time-machine cannot be imported (another
interpreter), or ``clock.json`` cannot be read, the process keeps the real clock and says nothing, so what it
prints is the same either way. Then it runs the ``sitecustomize`` this one shadows, if there is one.
"""

import json
import os
import sys
import threading
import time

REAL_SPEED_FRACTION = 2  # real speed for the first 1/2 of a step after an exchange...
REAL_AGAIN_AFTER_NS = 30_000_000_000  # ...and again once 30 s passed without one, so a wait on the wall clock ends


def advanced_ns(elapsed_ns: int, step_ns: int) -> int:
    """How far the clock has moved ``elapsed_ns`` of real time after an exchange: ``elapsed_ns`` itself for the
    first half step, then ever slower, staying below one step (so it keeps its second, and never reaches the
    next exchange's instant) until ``REAL_AGAIN_AFTER_NS``, after which it runs at real speed again."""
    half = step_ns // REAL_SPEED_FRACTION
    if elapsed_ns <= half:
        return max(elapsed_ns, 0)
    room = step_ns - half  # what is left of the step; the curve leaves the line at slope 1 and tends to it
    if elapsed_ns <= REAL_AGAIN_AFTER_NS:
        beyond = elapsed_ns - half
        return half + room * beyond // (beyond + room)
    beyond = REAL_AGAIN_AFTER_NS - half
    return half + room * beyond // (beyond + room) + (elapsed_ns - REAL_AGAIN_AFTER_NS)


class StartedClock:
    """A clock that starts at ``instant_ns`` on its first reading and advances as ``advanced_ns`` says."""

    def __init__(self, instant_ns: int, step_ns: int) -> None:
        self._instant_ns = instant_ns
        self._step_ns = step_ns
        self._started: int | None = None
        self._lock = threading.RLock()  # a signal handler reading the time inside a reading must not deadlock

    def time_ns(self) -> int:
        with self._lock:
            now = time.monotonic_ns()
            if self._started is None:
                self._started = now
            return self._instant_ns + advanced_ns(now - self._started, self._step_ns)


def travel_utc(instant_ns: int, time_ns: object) -> object:
    """Start time-machine's travel, its readings taken from ``time_ns`` (a function returning epoch ns), in UTC.

    time-machine reads every patched function (time.time, datetime.now, ...) from the traveller's ``time_ns``;
    the traveller's own is replaced by ours. Returns the ``travel`` to stop, or raises RuntimeError when the
    installed time-machine does not read the clock that way (checked, not assumed)."""
    import datetime

    blocked = [name for name in ("pytest", "dateutil") if name not in sys.modules]
    for name in blocked:  # time-machine imports them if it can; neither is needed here (pytest: ~0.25 s a process)
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import time_machine
    finally:
        for name in blocked:
            sys.modules.pop(name, None)
    moment = datetime.datetime.fromtimestamp(instant_ns // 1_000_000_000, datetime.timezone.utc)
    travel = time_machine.travel(moment, tick=False)
    traveller = travel.start()
    traveller.time_ns = time_ns  # type: ignore[attr-defined]
    first = time.time_ns()
    if not instant_ns <= first <= time_ns():  # type: ignore[operator]
        travel.stop()
        raise RuntimeError(f"time-machine {getattr(time_machine, '__version__', '?')} does not read its "
                           f"traveller's time_ns (got {first}, wanted about {instant_ns})")
    return travel


_travel = None  # the process's travel, stopped and started anew in a forked child (``_restart``)
_HAD_TZ = "TZ" in os.environ


def _install() -> None:
    global _travel
    folder = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(folder, "clock.json"), encoding="utf-8") as file:
            spec = json.load(file)
        clock = StartedClock(int(spec["instant_ns"]), int(spec["step_ns"]))
        _travel = travel_utc(int(spec["instant_ns"]), clock.time_ns)
    except Exception:  # noqa: BLE001 - no time-machine here, or no clock file: the real clock, silently
        return
    finally:
        if not _HAD_TZ:  # time-machine set TZ=UTC for the process; the code's environment stays as it was given
            os.environ.pop("TZ", None)


def _restart() -> None:
    """In a forked child: a process of its own, so its clock starts at the latest exchange too (a fork server's
    workers, ``reference_agent/executor/forkserver.py``, are forked from a process that started long before)."""
    global _travel
    if _travel is not None:
        try:
            _travel.stop()
        except Exception:  # noqa: BLE001 - then the new travel starts over whatever is left
            pass
        _travel = None
    _install()


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows (the next on ``sys.path``), as ``site`` would have."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if __name__ == "sitecustomize":
    _install()
    os.register_at_fork(after_in_child=_restart)
    _chain()
