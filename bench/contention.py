"""What a shared, frequently written ``app:`` key costs: N writers incrementing one ``app:counter`` at once.

Each writer is its own user and session of one app, on one ``DeltaSessionService`` (a DuckDB file), and does
what a turn through ADK's ``Runner`` does: load the session, spend ``think`` (the model's turn), append an event
setting ``app:counter`` to what it loaded plus one. Another writer's increment in between makes the append stale
(``StaleSessionError``: the key changed since this ``Session`` was loaded, so writing would lose that increment).

Two ways to meet it, each measured:

* **retry** (what a caller must add): reload and redo the turn until it lands. Every increment lands; the cost is
  the stale appends (retries) per increment.
* **no retry** (ADK's ``Runner``: ``run_async`` raises the ``StaleSessionError`` and the turn is lost): the share of
  turns that fail.

Either way the counter ends equal to the increments that were acknowledged: none is lost.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import BenchResult, Row, quiet

APP = "contention_app"
WRITERS = (2, 4, 8, 16)
QUICK_WRITERS = (2, 4)
TURNS = 20  # increments (retry) or turns (no retry) per writer
THINK_S = (0.0, 0.005)


async def contend(service: Any, writers: int, turns: int, *, think_s: float, retry: bool) -> dict[str, Any]:
    """``writers`` writers, ``turns`` each; returns the counts and the final counter (checked)."""
    from adk_compat import StaleSessionError
    from google.adk.events import Event, EventActions

    run = f"{writers}-{turns}-{think_s}-{retry}-{time.perf_counter_ns()}"
    counts = {"landed": 0, "stale": 0, "lost_turns": 0}
    for k in range(writers):
        await service.create_session(app_name=APP, user_id=f"{run}-w{k}", session_id="s")
    await service.append_event(
        await service.get_session(app_name=APP, user_id=f"{run}-w0", session_id="s"),
        Event(author="setup", invocation_id="setup", actions=EventActions(state_delta={"app:counter": 0})))

    async def writer(k: int) -> None:
        for _ in range(turns):
            while True:
                session = await service.get_session(app_name=APP, user_id=f"{run}-w{k}", session_id="s")
                await asyncio.sleep(think_s)
                event = Event(author=f"w{k}", invocation_id=f"inv-{k}",
                              actions=EventActions(state_delta={"app:counter": session.state["app:counter"] + 1}))
                try:
                    await service.append_event(session, event)
                except StaleSessionError:
                    counts["stale"] += 1
                    if retry:
                        continue
                    counts["lost_turns"] += 1
                    break
                counts["landed"] += 1
                break

    started = time.perf_counter()
    await asyncio.gather(*(writer(k) for k in range(writers)))
    wall = time.perf_counter() - started
    final = (await service.get_session(app_name=APP, user_id=f"{run}-w0", session_id="s")).state["app:counter"]
    if final != counts["landed"]:
        raise AssertionError(f"app:counter is {final} after {counts['landed']} acknowledged increments: lost updates")
    return {**counts, "final": final, "turns": writers * turns, "wall_s": wall}


async def _run_async(folder: Path, writers: tuple[int, ...], turns: int) -> dict[str, dict[str, Any]]:
    from reference_agent.sessions.delta_session_service import DeltaSessionService

    service = DeltaSessionService.duckdb(folder / "contention.duckdb")
    results: dict[str, dict[str, Any]] = {}
    try:
        for think in THINK_S:
            for n in writers:
                for retry in (True, False):
                    results[f"{n}/{think}/{retry}"] = await contend(service, n, turns, think_s=think, retry=retry)
    finally:
        service.close()
    return results


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    writers = QUICK_WRITERS if quick else WRITERS
    turns = 5 if quick else TURNS
    result = BenchResult()
    with tempfile.TemporaryDirectory(prefix="rlm-bench-contention-") as tmp, quiet():
        data = asyncio.run(_run_async(Path(tmp), writers, turns))
    result.details["runs"] = data
    for think in THINK_S:
        for n in writers:
            with_retry, without = data[f"{n}/{think}/True"], data[f"{n}/{think}/False"]
            label = f"{n} writers of one app: key, {turns} increments each, think {1000 * think:g} ms"
            result.rows.append(Row("contention", f"{label}: stale appends per increment (with retry)",
                                   with_retry["stale"] / with_retry["landed"], "",
                                   note=f"({with_retry['stale']} stale, all {with_retry['landed']} landed, "
                                        f"{with_retry['wall_s']:.2f} s)"))
            result.rows.append(Row("contention", f"{label}: turns lost without retry (ADK's Runner)",
                                   100 * without["lost_turns"] / without["turns"], "%",
                                   note=f"({without['lost_turns']} of {without['turns']}; the counter = "
                                        f"{without['final']} landed, none lost)"))
    return result
