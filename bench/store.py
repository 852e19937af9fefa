"""Session store: append_event p50/p99 and get_session, at 10 / 100 / 1,000 / 10,000 events.

Three services in one run, one database file each (a session of every size lives
in the same file, as sessions of different lengths do in production):

* ``DeltaSessionService`` on DuckDB (ours, the default: a file);
* ADK's ``DatabaseSessionService`` on ``sqlite+aiosqlite`` (the baseline);
* ADK's ``InMemorySessionService`` (context: the floor).

Every event is the same shape as the agent's: an author, an invocation id, a
~200-character text, and a state delta with two session keys and one ``temp:``
key (never persisted); every tenth also sets a ``user:`` key. append_event is timed
one call at a time over all the appends of a session (p50, p99); get_session
(all events) is timed a few times once the session is full (median). Every
get_session is checked to return all the events. Targets: ours at least as fast
as ADK's sqlite service at every size; get_session no worse than linear
(log-log slope from 1,000 to 10,000 events <= 1.1, i.e. 10 % noise allowance).
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
APP, USER = "bench_app", "bench_user"
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


async def measure_size(service: Any, size: int, samples: int) -> dict[str, Any]:
    session_id = f"session-{size}"
    session = await service.create_session(app_name=APP, user_id=USER, session_id=session_id)
    timer: SqlTimer | None = getattr(service, "_bench_sql_timer", None)
    appends: list[float] = []
    gc.collect()
    if timer:
        timer.take()
    for i in range(size):
        event = make_event(i, f"inv-{i // 8}")
        started = time.perf_counter()
        await service.append_event(session, event)
        appends.append(time.perf_counter() - started)
    sql_append = timer.take() if timer else None
    gets: list[float] = []
    for _ in range(samples):
        started = time.perf_counter()
        loaded = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
        gets.append(time.perf_counter() - started)
        if loaded is None or len(loaded.events) != size:
            raise AssertionError(f"{type(service).__name__}: get_session returned "
                                 f"{None if loaded is None else len(loaded.events)} events, expected {size}")
        if loaded.state.get("rlm:iteration") != size - 1 or "temp:rlm:stage" in loaded.state:
            raise AssertionError(f"{type(service).__name__}: unexpected state after {size} appends: "
                                 f"{ {k: loaded.state.get(k) for k in ('rlm:iteration', 'temp:rlm:stage')} }")
    sql_get = timer.take() if timer else None
    sql = {}
    if sql_append and sql_get:
        sql = {"append_sql_ms_mean": 1000 * sql_append[0] / size, "append_statements": sql_append[1] / size,
               "get_sql_ms_mean": 1000 * sql_get[0] / samples, "get_statements": sql_get[1] / samples,
               "get_mean_ms": 1000 * sum(gets) / samples}
    return {**sql, "append_p50_ms": 1000 * percentile(appends, 50), "append_p99_ms": 1000 * percentile(appends, 99),
            "append_mean_ms": 1000 * sum(appends) / len(appends), "append_total_s": sum(appends),
            "get_median_ms": 1000 * median(gets), "get_samples_ms": [1000 * g for g in gets], "appends": len(appends)}


def get_samples(size: int) -> int:
    return 3 if size >= 10_000 else 5


async def _run_async(sizes: tuple[int, ...], folder: Path) -> dict[str, dict[int, dict[str, Any]]]:
    services = {kind: build_service(kind, folder) for kind in SERVICES}
    data: dict[str, dict[int, dict[str, Any]]] = {kind: {} for kind in SERVICES}
    try:
        # Interleaved by size, so a noisy minute hits every service alike.
        for size in sizes:
            for kind in SERVICES:
                started = time.perf_counter()
                data[kind][size] = await measure_size(services[kind][0], size, get_samples(size))
                data[kind][size]["wall_s"] = time.perf_counter() - started
    finally:
        for _, close in services.values():
            await close()
    return data


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    result = BenchResult()
    with tempfile.TemporaryDirectory(prefix="rlm-bench-store-") as tmp, quiet():
        data = asyncio.run(_run_async(sizes, Path(tmp)))
    result.details["by_service"] = {LABELS[k]: {str(s): v for s, v in d.items()} for k, d in data.items()}
    rows = result.rows
    ours, adk, mem = data["delta"], data["adk-sqlite"], data["adk-memory"]
    for size in sizes:
        for metric, label in (("append_p50_ms", "append_event p50"), ("append_p99_ms", "append_event p99"),
                              ("get_median_ms", "get_session (median)")):
            value, base = ours[size][metric], adk[size][metric]
            rows.append(Row("store", f"{label}, {size:,} events", value, "ms", base, "ADK sqlite",
                            target="<= 1.0x", met=value <= base,
                            note=f"(in-memory: {mem[size][metric]:.3f} ms)"))
    for size in (sizes[0], sizes[-1]):
        m = ours[size]
        rows.append(Row("store", f"ours, where append_event goes at {size:,} events: DuckDB (mean ms of mean)",
                        m["append_sql_ms_mean"], "ms", m["append_mean_ms"], "whole append",
                        note=f"({m['append_statements']:.1f} statements incl. BEGIN/COMMIT per append)"))
        rows.append(Row("store", f"ours, where get_session goes at {size:,} events: DuckDB (mean ms of mean)",
                        m["get_sql_ms_mean"], "ms", m["get_mean_ms"], "whole get_session",
                        note=f"({m['get_statements']:.0f} statements incl. BEGIN/COMMIT; the rest builds Events)"))
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
