"""Session store: append_event p50/p99 and get_session, at 10 / 100 / 1,000 / 10,000 events.

Three services in one run, one database file each:

* ``DeltaSessionService`` on DuckDB (ours, the default: a file);
* ADK's ``DatabaseSessionService`` on ``sqlite+aiosqlite`` (the baseline);
* ADK's ``InMemorySessionService`` (context: the floor).

One session per service grows from 0 to 10,000 events, the services taking turns
every ``CHUNK`` appends so a noisy minute hits all three alike. The figures "at N
events" are the appends that brought the session from the previous size to N
(1–10, 11–100, 101–1,000, 1,001–10,000; every append timed: p50, p99) and
get_session (all events) once it holds N (median of 3–5; each is checked to
return every event and the expected state). Every event is the same shape as the
agent's: an author, an invocation id, a ~200-character text, and a state delta
with two session keys and one ``temp:`` key (never persisted); every tenth also
sets a ``user:`` key. Three more figures of ours, each against a same-run baseline: append_event in a session
holding a 20 MB value vs a small session (turn about), an append touching one ``user:`` key of a user whose other
keys hold 20 MB vs a small user's, and 16 sessions appending at once vs one after another.
Targets: ours at least as fast as ADK's sqlite service at
every size; get_session no worse than linear (log-log slope from 1,000 to 10,000
events <= 1.1, i.e. 10 % noise allowance).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .common import BenchResult, Row, loglog_slope, median, percentile, quiet

SIZES = (10, 100, 1_000, 10_000)
QUICK_SIZES = (10, 100)
SLOPE_LIMIT = 1.1
APPEND_P50_LIMIT = 0.5  # issue 21: an append at most half of ADK's sqlite service's
APP, USER, SESSION = "bench_app", "bench_user", "bench_session"
CHUNK = 250  # appends a service makes before the next one takes its turn
SERVICES = ("delta", "adk-sqlite", "adk-memory")
LABELS = {"delta": "DeltaSessionService (DuckDB)", "adk-sqlite": "ADK DatabaseSessionService (sqlite)",
          "adk-memory": "ADK InMemorySessionService"}


def make_event(i: int, invocation: str) -> Any:
    from google.adk.events import Event, EventActions
    from google.genai import types

    delta: dict[str, Any] = {"rlm:iteration": i, "rlm:last_artifact_id": f"artifact-{i:06d}",
                             "temp:rlm:stage": "delegated"}
    if i % 10 == 0:
        delta["user:rlm:sessions_seen"] = i
    text = f"event {i}: " + "the analyst reads the results and decides what to run next. " * 3
    return Event(invocation_id=invocation, author="databricks_analyst" if i % 2 else "job_builder",
                 content=types.Content(role="model", parts=[types.Part.from_text(text=text)]),
                 actions=EventActions(state_delta=delta))


def build_service(kind: str, folder: Path) -> tuple[Any, Callable[[], Any]]:
    """The service and an async close."""
    if kind == "delta":
        from reference_agent.sessions.delta_session_service import DeltaSessionService

        service = DeltaSessionService.duckdb(folder / "delta.duckdb")
        service._bench_sql_timer = SqlTimer(service.engine)  # type: ignore[attr-defined]

        async def close() -> None:
            service.close()

        return service, close
    if kind == "adk-sqlite":
        from google.adk.sessions import DatabaseSessionService

        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{folder / 'adk.db'}")
        return service, service.close
    if kind == "adk-memory":
        from google.adk.sessions import InMemorySessionService

        async def noop() -> None:
            return None

        return InMemorySessionService(), noop
    raise ValueError(kind)


class SqlTimer:
    """Time spent inside a ``SqlEngine`` (statements, BEGIN and COMMIT): where ours spends its time."""

    def __init__(self, engine: Any) -> None:
        self.seconds = 0.0
        self.statements = 0
        execute, transaction = engine.execute, engine.transaction

        def timed_execute(sql: str, params: Any = None) -> Any:
            started = time.perf_counter()
            try:
                return execute(sql, params)
            finally:
                self.seconds += time.perf_counter() - started
                self.statements += 1

        @contextlib.contextmanager
        def timed_transaction() -> Iterator[None]:
            manager = transaction()
            started = time.perf_counter()
            manager.__enter__()
            self.seconds += time.perf_counter() - started
            try:
                yield
            except BaseException:
                started = time.perf_counter()
                if not manager.__exit__(*sys.exc_info()):
                    self.seconds += time.perf_counter() - started
                    raise
            else:
                started = time.perf_counter()
                manager.__exit__(None, None, None)
                self.seconds += time.perf_counter() - started
                self.statements += 2  # BEGIN, COMMIT

        engine.execute, engine.transaction = timed_execute, timed_transaction

    def take(self) -> tuple[float, int]:
        taken = self.seconds, self.statements
        self.seconds, self.statements = 0.0, 0
        return taken


class Grower:
    """One service's session, grown event by event; every append is timed."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.session: Any = None
        self.count = 0
        self.appends: list[float] = []  # of the current size window
        self.timer: SqlTimer | None = getattr(service, "_bench_sql_timer", None)

    async def start(self) -> None:
        self.session = await self.service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        if self.timer:
            self.timer.take()

    async def grow(self, until: int) -> None:
        while self.count < until:
            event = make_event(self.count, f"inv-{self.count // 8}")
            started = time.perf_counter()
            await self.service.append_event(self.session, event)
            self.appends.append(time.perf_counter() - started)
            self.count += 1

    async def measure(self, samples: int) -> dict[str, Any]:
        """Figures of the window that just ended (appends since the last call), and get_session at this size."""
        size, appends, self.appends = self.count, self.appends, []
        sql_append = self.timer.take() if self.timer else None
        gets: list[float] = []
        for _ in range(samples):
            started = time.perf_counter()
            loaded = await self.service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
            gets.append(time.perf_counter() - started)
            if loaded is None or len(loaded.events) != size:
                raise AssertionError(f"{type(self.service).__name__}: get_session returned "
                                     f"{None if loaded is None else len(loaded.events)} events, expected {size}")
            if loaded.state.get("rlm:iteration") != size - 1 or "temp:rlm:stage" in loaded.state:
                raise AssertionError(f"{type(self.service).__name__}: unexpected state after {size} appends: "
                                     f"{ {k: loaded.state.get(k) for k in ('rlm:iteration', 'temp:rlm:stage')} }")
        sql_get = self.timer.take() if self.timer else None
        sql = {}
        if sql_append and sql_get:
            sql = {"append_sql_ms_mean": 1000 * sql_append[0] / len(appends),
                   "append_statements": sql_append[1] / len(appends),
                   "get_sql_ms_mean": 1000 * sql_get[0] / samples, "get_statements": sql_get[1] / samples,
                   "get_mean_ms": 1000 * sum(gets) / samples}
        return {**sql, "append_p50_ms": 1000 * percentile(appends, 50),
                "append_p99_ms": 1000 * percentile(appends, 99), "append_mean_ms": 1000 * sum(appends) / len(appends),
                "append_total_s": sum(appends), "appends": len(appends), "appended_from": size - len(appends),
                "get_median_ms": 1000 * median(gets), "get_samples_ms": [1000 * g for g in gets]}


def get_samples(size: int) -> int:
    return 3 if size >= 10_000 else 5


async def _run_async(sizes: tuple[int, ...], folder: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """One session per service grows through every size; the appends that brought it to a size are that size's.

    The services take turns in chunks of CHUNK appends, so a noisy minute hits every service alike.
    """
    services = {kind: build_service(kind, folder) for kind in SERVICES}
    growers = {kind: Grower(services[kind][0]) for kind in SERVICES}
    data: dict[str, dict[int, dict[str, Any]]] = {kind: {} for kind in SERVICES}
    try:
        for grower in growers.values():
            await grower.start()
        for size in sizes:
            started = {kind: 0.0 for kind in SERVICES}
            at = min(g.count for g in growers.values())
            while at < size:
                at = min(size, at + CHUNK)
                for kind, grower in growers.items():
                    t0 = time.perf_counter()
                    await grower.grow(at)
                    started[kind] += time.perf_counter() - t0
            for kind, grower in growers.items():
                t0 = time.perf_counter()
                gc.collect()
                data[kind][size] = await grower.measure(get_samples(size))
                data[kind][size]["wall_s"] = started[kind] + time.perf_counter() - t0
    finally:
        for _, close in services.values():
            await close()
    return data


BIG_VALUE_CHARS = 20_000_000
CONCURRENT_SESSIONS = 16


async def _big_state_appends(folder: Path, appends: int) -> dict[str, float]:
    """append_event p50 of a session holding a 20 MB value vs a small session, taking turns (ours)."""
    from google.adk.events import Event, EventActions

    service, close = build_service("delta", folder)
    try:
        # Two users: the events' user: keys would make the two sessions each other's rivals.
        small = await service.create_session(app_name=APP, user_id="small_user", session_id="small")
        big = await service.create_session(app_name=APP, user_id="big_user", session_id="big")
        await service.append_event(big, Event(author="x", invocation_id="i",
                                              actions=EventActions(state_delta={"blob": "x" * BIG_VALUE_CHARS})))
        times: dict[str, list[float]] = {"small": [], "big": []}
        for i in range(appends):
            for name, session in (("small", small), ("big", big)):
                event = make_event(i + 1, f"inv-{i}")
                started = time.perf_counter()
                await service.append_event(session, event)
                times[name].append(time.perf_counter() - started)
    finally:
        await close()
    return {name: 1000 * percentile(t, 50) for name, t in times.items()}


async def _big_user_row_appends(folder: Path, appends: int) -> dict[str, float]:
    """append_event p50 of an append touching one ``user:`` key when the user's other keys hold 20 MB vs when they
    hold little (two users, turn about; ours)."""
    from google.adk.events import Event, EventActions

    service, close = build_service("delta", folder)
    try:
        small = await service.create_session(app_name=APP, user_id="small_user", session_id="small",
                                             state={"user:blob": "x"})
        big = await service.create_session(app_name=APP, user_id="big_user", session_id="big",
                                           state={"user:blob": "x" * BIG_VALUE_CHARS})
        times: dict[str, list[float]] = {"small": [], "big": []}
        for i in range(appends):
            for name, session in (("small", small), ("big", big)):
                event = Event(author="x", invocation_id=f"inv-{i}",
                              actions=EventActions(state_delta={"user:rlm:sessions_seen": i, "rlm:iteration": i}))
                started = time.perf_counter()
                await service.append_event(session, event)
                times[name].append(time.perf_counter() - started)
        for name, session in (("small", small), ("big", big)):  # the appends are stored, the big value kept
            loaded = await service.get_user_state(app_name=APP, user_id=session.user_id)
            if loaded.get("rlm:sessions_seen") != appends - 1 or len(loaded["blob"]) != len(session.state["user:blob"]):
                raise AssertionError(f"user state of {name} after {appends} appends: {sorted(loaded)}")
    finally:
        await close()
    return {name: 1000 * percentile(t, 50) for name, t in times.items()}


async def _concurrent_appends(folder: Path, per_session: int) -> dict[str, float]:
    """Wall time of CONCURRENT_SESSIONS sessions appending at once (asyncio.gather) vs one after another (ours)."""
    service, close = build_service("delta", folder)
    walls = {"serial": 0.0, "concurrent": 0.0}

    async def grow(session: Any, k: int) -> None:
        for i in range(per_session):
            await service.append_event(session, make_event(i, f"inv-{k}-{i // 8}"))

    try:
        for round_ in range(2):  # serial, concurrent, concurrent, serial: a noisy minute hits both
            for mode in (("serial", "concurrent") if round_ == 0 else ("concurrent", "serial")):
                sessions = [await service.create_session(app_name=APP, user_id=f"u{k}", session_id=f"{mode}{round_}-{k}")
                            for k in range(CONCURRENT_SESSIONS)]
                started = time.perf_counter()
                if mode == "serial":
                    for k, session in enumerate(sessions):
                        await grow(session, k)
                else:
                    await asyncio.gather(*(grow(session, k) for k, session in enumerate(sessions)))
                walls[mode] += (time.perf_counter() - started) / 2
    finally:
        await close()
    return walls


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    result = BenchResult()
    with tempfile.TemporaryDirectory(prefix="rlm-bench-store-") as tmp, quiet():
        data = asyncio.run(_run_async(sizes, Path(tmp)))
        (Path(tmp) / "big").mkdir()
        (Path(tmp) / "concurrent").mkdir()
        (Path(tmp) / "big_user").mkdir()
        big = asyncio.run(_big_state_appends(Path(tmp) / "big", 10 if quick else 40))
        big_user = asyncio.run(_big_user_row_appends(Path(tmp) / "big_user", 10 if quick else 40))
        per_session = 2 if quick else 62  # quick: the row is made, its figure means nothing
        walls = asyncio.run(_concurrent_appends(Path(tmp) / "concurrent", per_session))
    result.details["by_service"] = {LABELS[k]: {str(s): v for s, v in d.items()} for k, d in data.items()}
    rows = result.rows
    ours, adk, mem = data["delta"], data["adk-sqlite"], data["adk-memory"]
    for size in sizes:
        for metric, label in (("append_p50_ms", "append_event p50"), ("append_p99_ms", "append_event p99"),
                              ("get_median_ms", "get_session (median)")):
            value, base = ours[size][metric], adk[size][metric]
            limit = APPEND_P50_LIMIT if metric == "append_p50_ms" else 1.0
            rows.append(Row("store", f"{label}, {size:,} events", value, "ms", base, "ADK sqlite",
                            target=f"<= {limit}x", met=value <= limit * base,
                            note=f"(in-memory: {mem[size][metric]:.3f} ms)"))
    for size in (sizes[0], sizes[-1]):
        m = ours[size]
        rows.append(Row("store", f"ours, where append_event goes at {size:,} events: DuckDB (mean ms of mean)",
                        m["append_sql_ms_mean"], "ms", m["append_mean_ms"], "whole append",
                        note=f"({m['append_statements']:.1f} statements incl. BEGIN/COMMIT per append)"))
        rows.append(Row("store", f"ours, where get_session goes at {size:,} events: DuckDB (mean ms of mean)",
                        m["get_sql_ms_mean"], "ms", m["get_mean_ms"], "whole get_session",
                        note=f"({m['get_statements']:.0f} statements incl. BEGIN/COMMIT; the rest builds Events)"))
    rows.append(Row("store", "ours, append_event p50 in a session holding a 20 MB value (turn about)", big["big"],
                    "ms", big["small"], "a small session", target="<= 1.5x (flat)",
                    met=big["big"] <= 1.5 * big["small"], note="(the state is not rewritten by an append)"))
    rows.append(Row("store", "ours, append touching one user: key, 20 MB user: row (turn about)", big_user["big"],
                    "ms", big_user["small"], "a small user: row", target="<= 1.5x (flat)",
                    met=big_user["big"] <= 1.5 * big_user["small"],
                    note="(scope state is stored per key: an append writes the keys it touches)"))
    total = CONCURRENT_SESSIONS * per_session
    rows.append(Row("store", f"ours, {CONCURRENT_SESSIONS} sessions appending at once, {total:,} appends (wall)",
                    walls["concurrent"], "s", walls["serial"], "one session after another",
                    note="(DuckDB runs in a worker thread; the event loop stays free)"))
    if len(sizes) >= 2:
        small, large = sizes[-2], sizes[-1]
        for kind, label in (("delta", "ours"), ("adk-sqlite", "ADK sqlite"), ("adk-memory", "in-memory")):
            slope = loglog_slope(small, data[kind][small]["get_median_ms"], large, data[kind][large]["get_median_ms"])
            if kind == "delta":
                rows.append(Row("store", f"get_session growth {small:,}->{large:,} events, {label} (log-log slope)",
                                slope, "", target=f"<= {SLOPE_LIMIT} (linear = 1.0)", met=slope <= SLOPE_LIMIT))
            else:
                rows.append(Row("store", f"get_session growth {small:,}->{large:,} events, {label} (log-log slope)",
                                slope, ""))
    return result
