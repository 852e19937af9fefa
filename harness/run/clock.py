"""The wall clock a target sees: one instant per scenario, moved one step by each model exchange.

An agent that puts ``datetime.now()`` into a prompt or a state value (a run id stamped to the second, "today is
...") sends something else on every run, so a cassette recorded once would be stale on replay. While a scenario
runs in replay or scripted mode, or is recorded (live too), the target reads a clock of the harness's instead of
the machine's, through time-machine (``time.time()``, ``datetime.now()``, ``date.today()``, ``time.localtime()``
and the rest, in UTC):

* it starts at the scenario's ``clock_start``, else the instant the cassette was recorded with (replay), else
  ``DEFAULT_START`` offline and the real time (to the second) in a live recording, which the cassette stores
  (``metadata.clock``) so its replay starts there too;
* each model exchange recorded in, or played from, the cassette (model calls, countTokens, the gateway's calls)
  moves it to ``start + exchanges x STEP``; in scripted mode without a cassette, each call the scripted
  endpoint served does. A recording takes seconds a call and its replay milliseconds, yet both read the same
  second wherever they read the clock;
* between two exchanges it advances as ``advanced_ns`` says: at real speed for half a step, then ever slower,
  never reaching the next step, so it never goes backwards and two readings rarely tie. After
  ``REAL_AGAIN_AFTER_NS`` without an exchange it runs at real speed again (a wait on the wall clock ends) and
  from then on may differ between a recording and its replay until the exchanges catch up with it.

``time.monotonic()`` and ``time.perf_counter()`` stay real: asyncio, timeouts and durations need them. Python
processes the target starts see the clock too: the harness writes a folder with a ``sitecustomize`` and
``clock.json`` (the instant of the latest exchange, rewritten at each) and puts it first on ``PYTHONPATH``, and
names it in ``EXECUTOR_SITE_VARIABLE`` for an executor that passes its children a clean environment
(``harness/run/clock_site/sitecustomize.py``). Live runs that record nothing, and the databricks backend, keep the
real clock. See docs/your-agent.md, "The clock".
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock_site.sitecustomize import REAL_AGAIN_AFTER_NS, advanced_ns, travel_utc
from ..environ import patched_environ
from ..errors import CassetteError, HarnessError
from ..llm.modes import LlmMode

if TYPE_CHECKING:
    from ..llm.session import LlmSession
    from .options import RunOptions
    from ..scenario.models import Scenario

__all__ = ["DEFAULT_START", "EXECUTOR_SITE_VARIABLE", "METADATA_KEY", "REAL_AGAIN_AFTER_NS", "STEP",
           "ScenarioClock", "advanced_ns", "running_clock", "scenario_clock"]

DEFAULT_START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
STEP = datetime.timedelta(seconds=1)
METADATA_KEY = "clock"
"""The cassette's ``metadata.clock``: ``{start: ISO 8601, step_s: seconds}``, written when recording."""
EXECUTOR_SITE_VARIABLE = "RLM_EXECUTOR_SITE"  # = reference_agent.backends.process.EXECUTOR_SITE_VARIABLE
SITE_SOURCE = Path(__file__).resolve().parent / "clock_site" / "sitecustomize.py"
_NS = 1_000_000_000


def _ns(moment: datetime.datetime) -> int:
    whole = int(moment.replace(microsecond=0).timestamp())
    return whole * _NS + moment.microsecond * 1_000


class ScenarioClock:
    """Epoch nanoseconds: ``start_ns`` plus ``step_ns`` per exchange counted by ``exchanges`` since the clock was
    made, plus ``advanced_ns`` of the real time since the first reading after the latest one. Never decreases.
    ``site``: the folder whose ``clock.json`` gets the instant of each exchange, for the target's subprocesses."""

    def __init__(self, *, start_ns: int, step_ns: int, exchanges: Callable[[], int], site: Path | None = None
                 ) -> None:
        self.start_ns = start_ns
        self.step_ns = step_ns
        self.site = site
        self._exchanges = exchanges
        self._first = exchanges()
        self._seen = 0
        self._base = start_ns
        self._since: int | None = None
        self._last = start_ns
        # Read from any thread, and re-entered by a signal handler or a finalizer that reads the time meanwhile.
        self._lock = threading.RLock()
        if site is not None:
            site.mkdir(parents=True, exist_ok=True)
            source = SITE_SOURCE.read_bytes()
            module = site / "sitecustomize.py"
            if not module.is_file() or module.read_bytes() != source:  # a process starting now reads it whole
                staged = site / f"sitecustomize.{os.getpid()}.tmp"
                staged.write_bytes(source)
                os.replace(staged, module)
            self._publish(start_ns)

    @property
    def exchanges(self) -> int:
        """The exchanges the clock has moved for so far."""
        return self._seen

    def time_ns(self) -> int:
        with self._lock:
            now = time.monotonic_ns()
            seen = self._exchanges() - self._first
            if seen != self._seen:
                self._seen = seen
                self._base = max(self.start_ns + seen * self.step_ns, self._last)
                self._since = now
                self._publish(self._base)
            elif self._since is None:
                self._since = now
            self._last = max(self._base + advanced_ns(now - self._since, self.step_ns), self._last)
            return self._last

    def _publish(self, instant_ns: int) -> None:
        """``clock.json`` for processes started from now on (replaced whole: a starting process reads either).

        Each instant goes to a new file and ``clock.json`` becomes a symlink to it, swapped in with ``os.replace``:
        replacing a file that holds data makes ext4 write the new file's blocks out first (``auto_da_alloc``, ~2 ms
        a publication, three or so a scenario), a symlink costs ~0.15 ms. Where symlinks cannot be made, the file
        itself is replaced."""
        if self.site is None:
            return
        staged = self.site / f"clock-{next(_PUBLICATIONS)}.json"  # never rewritten: a reader may be on it
        target = self.site / "clock.json"
        try:
            staged.write_text(json.dumps({"instant_ns": instant_ns, "step_ns": self.step_ns}), encoding="utf-8")
            link = self.site / "clock.json.link"
            try:
                os.symlink(staged.name, link)
            except (OSError, NotImplementedError):
                os.replace(staged, target)
            else:
                os.replace(link, target)
        except OSError:  # inside a reading of the clock (no logging: it reads the clock): a later process starts at
            # the previous instant, which only a folder removed under the run can cause
            pass


@contextlib.contextmanager
def running_clock(clock: ScenarioClock) -> Iterator[ScenarioClock]:
    """The process reads ``clock`` (time-machine; TZ=UTC) until the block ends; with a ``site``, Python processes
    started meanwhile read it too (``PYTHONPATH``, ``EXECUTOR_SITE_VARIABLE``). Everything is put back after."""
    variables: dict[str, str | None] = {}
    if clock.site is not None:
        site = str(clock.site)
        variables = {"PYTHONPATH": os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH", "")) if p),
                     EXECUTOR_SITE_VARIABLE: site}
    with patched_environ(variables):
        try:
            travel: Any = travel_utc(clock.start_ns, clock.time_ns)
        except (ImportError, RuntimeError) as exc:
            raise HarnessError(f"The scenario clock could not start: {exc}. It needs time-machine>=3.6,<4 (pip "
                               f"install 'time-machine>=3.6,<4'); see docs/your-agent.md, 'The clock'.") from exc
        try:
            yield clock
        finally:
            travel.stop()


def _recorded_start(cassette: Any) -> tuple[datetime.datetime, datetime.timedelta] | None:
    """The start and step a cassette being replayed was recorded with; None for a cassette from before the clock."""
    from vcr.errors import MissingMetadataError

    try:
        block = cassette.get_metadata(METADATA_KEY, None)
    except MissingMetadataError:
        return None
    where = f"cassette {getattr(cassette, '_path', '?')}: metadata.{METADATA_KEY}"
    try:
        start = datetime.datetime.fromisoformat(str(block["start"]))
        step = datetime.timedelta(seconds=float(block["step_s"]))
    except (TypeError, KeyError, ValueError) as exc:
        raise CassetteError(f"{where} must be {{start: ISO 8601 instant, step_s: seconds}}, got {block!r}: the file "
                            f"was edited by hand; re-record the scenario") from exc
    if start.tzinfo is None or step <= datetime.timedelta(0):
        raise CassetteError(f"{where} needs a time zone on its start and a positive step, got {block!r}; "
                            f"re-record the scenario")
    return start, step


def _store_start(cassette: Any, start: datetime.datetime, step: datetime.timedelta) -> None:
    values = {"start": start.isoformat(), "step_s": step.total_seconds()}
    block = cassette.get_metadata(METADATA_KEY, values)
    if block is not values:  # re-recording over an older cassette: this run's instant, not the old one
        block.clear()
        block.update(values)


def _exchange_counter(llm: LlmSession) -> Callable[[], int]:
    """What moves the clock: the cassette's played (replay) or recorded interactions, else the scripted calls."""
    cassette = llm.cassette
    if cassette is not None and cassette.write_protected:
        return lambda: len(cassette.play_counts)  # no repeats: one entry per played interaction
    if cassette is not None:
        return lambda: len(cassette.data)
    if llm.scripted is not None:
        scripted = llm.scripted
        return lambda: len(scripted.calls)
    return lambda: 0


_PUBLICATIONS = itertools.count(1)
_SITES: dict[int, Path] = {}  # pid -> this process's clock folder


def process_site() -> Path:
    """This process's clock folder, the same for every scenario it runs (one at a time: the clock is the
    process's), removed at exit. The same folder keeps the target's executor processes comparable from one
    scenario to the next: a fork server started with it on PYTHONPATH (the reference agent's Job_B) serves
    them all, its workers reading the clock when forked (``clock_site/sitecustomize.py``)."""
    pid = os.getpid()
    if pid not in _SITES:
        folder = _SITES[pid] = Path(tempfile.mkdtemp(prefix="rlm-clock-site-"))
        atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))
    return _SITES[pid]


def scenario_clock(scenario: Scenario, options: RunOptions, llm: LlmSession) -> Any:
    """The clock this run's target reads (a context manager; a do-nothing one where the real clock stays)."""
    live = options.llm_mode is LlmMode.LIVE
    if not options.frozen_clock or options.backend != "local" or (live and not options.record):
        return contextlib.nullcontext(None)
    cassette = llm.cassette
    replaying = cassette is not None and cassette.write_protected
    recorded = _recorded_start(cassette) if replaying and scenario.clock_start is None else None
    start, step = recorded or (scenario.clock_start or (
        datetime.datetime.now(datetime.UTC).replace(microsecond=0) if live else DEFAULT_START), STEP)
    if cassette is not None and not replaying:
        _store_start(cassette, start, step)
    clock = ScenarioClock(start_ns=_ns(start), step_ns=int(step.total_seconds() * _NS),
                          exchanges=_exchange_counter(llm), site=process_site())
    return running_clock(clock)
