"""State budget: persisted session state and events-table bytes per iteration as stdout grows.

The reference agent runs on its embedded defaults (DuckDB file, local Job_B,
``DeltaSessionService``) with a scripted model: one turn, two delegations, each
printing S bytes (S = 1 KB, 10 KB, 100 KB, 1 MB, 10 MB), then exit. After the
turn the bench reads what *storage* holds: the session state (``persisted_rows``: the row's snapshot and the
later deltas), and every events row (``state_delta_json`` + ``deleted_keys_json`` + ``event_json``).
stdout belongs in the volume (the result JSON, itself capped at
``output_cap_bytes``); state gets pointers and previews in ``temp:`` only.

Targets: persisted session state < 16 KB at every size, and flat — each figure
within 1.1x of the same figure at 1 KB of stdout (the baseline, same run).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import BenchResult, Row, quiet

SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 100_000)
STATE_BUDGET_B = 16_384
FLAT_LIMIT = 1.1
ITERATIONS = 2
USER, SESSION = "bench_user", "bench_state"


def _code(size: int, iteration: int) -> str:
    # Varied text, written in one go, exactly `size` bytes of ASCII.
    return (f"import sys\nline = 'iteration {iteration}: ' + 'abcdefghijklmnopqrstuvwxyz0123456789' * 3 + '\\n'\n"
            f"sys.stdout.write((line * ({size} // len(line) + 1))[:{size}])\n")


def _size_label(size: int) -> str:
    return f"{size // 1_000_000} MB" if size >= 1_000_000 else f"{size // 1_000} KB"


async def _measure(size: int, home: Path) -> dict[str, Any]:
    from reference_agent import state_contract as keys
    from reference_agent.config import AgentSettings
    from reference_agent.models.scripted import Reply
    from reference_agent.run import run_conversation
    from reference_agent.testing import build_local_stack

    delegate = [Reply(call="delegate_code_results", args={"code": _code(size, i + 1),
                                                         "instruction": "Report how much was printed."})
                for i in range(ITERATIONS)]
    script = {
        keys.ANALYST: [*delegate, Reply(call="exit_loop")],
        keys.RESULTS_PROCESSOR: [Reply(text=f"Iteration {i + 1} printed a long report; the head shows the "
                                            f"rows in order.") for i in range(ITERATIONS)],
    }
    settings = AgentSettings(home=home, executor_timeout_s=60.0)
    stack = build_local_stack(home, script=script, settings=settings)
    try:
        started = time.perf_counter()
        outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="Print the report.")
        turn_s = time.perf_counter() - started
        app = stack.runner.app_name
        rows = await stack.session_service.persisted_rows(app_name=app, user_id=USER, session_id=SESSION)
        engine = stack.session_service.engine
        events = engine.execute(
            "SELECT state_delta_json, deleted_keys_json, event_json FROM events"
            " WHERE app_name = :app AND user_id = :user AND session_id = :sid ORDER BY seq",
            {"app": app, "user": USER, "sid": SESSION})
        event_bytes = [sum(len((c or "").encode("utf-8")) for c in row) for row in events]
        results = []
        for artifact in stack.services.registry.list_for_session(app, USER, SESSION):
            if artifact.result_json_path:
                result = json.loads(stack.services.volume.read_text(artifact.result_json_path))
                results.append({"stdout_bytes": result.get("stdout_bytes"),
                                "stdout_kept": len(result.get("stdout") or ""),
                                "result_json_bytes": len(stack.services.volume.read_text(
                                    artifact.result_json_path).encode("utf-8"))})
        session = await stack.session_service.get_session(app_name=app, user_id=USER, session_id=SESSION)
        return {
            "stdout_bytes": size,
            "termination": outcome.termination,
            "delegations": outcome.delegations,
            # The session state as stored (its snapshot with the later deltas folded in), as JSON text.
            "state_bytes": len(json.dumps(rows.state, ensure_ascii=False).encode("utf-8")),
            "state_keys": sorted(rows.state),
            "events": len(event_bytes),
            "events_bytes": sum(event_bytes),
            "events_bytes_per_iteration": sum(event_bytes) / max(1, outcome.delegations),
            "largest_event_bytes": max(event_bytes, default=0),
            "temp_keys_persisted": sorted(k for k in rows.state if k.startswith("temp:")),
            "summary_in_state": session.state.get(keys.LAST_RESULTS_SUMMARY) if session else None,
            "results": results,
            "turn_s": turn_s,
        }
    finally:
        stack.services.engine.close()


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    result = BenchResult()
    measured: dict[int, dict[str, Any]] = {}
    with quiet():
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="rlm-bench-state-") as tmp:
                measured[size] = asyncio.run(_measure(size, Path(tmp)))
    result.details["by_stdout_bytes"] = {str(k): v for k, v in measured.items()}
    base = measured[sizes[0]]
    for size in sizes:
        m = measured[size]
        problems = []
        if m["delegations"] != ITERATIONS or m["termination"] != "exit_loop":
            problems.append(f"run ended {m['termination']} after {m['delegations']} delegations")
        if m["temp_keys_persisted"]:
            problems.append(f"temp: keys persisted: {m['temp_keys_persisted']}")
        ok = not problems
        note = "; ".join(problems)
        state_ratio = m["state_bytes"] / base["state_bytes"]
        rows = result.rows
        rows.append(Row("state", f"persisted session state, stdout {_size_label(size)} x{ITERATIONS}", m["state_bytes"],
                        "B", base["state_bytes"], f"at {_size_label(sizes[0])}",
                        target=f"< {STATE_BUDGET_B:,} B, flat (<= {FLAT_LIMIT}x)",
                        met=ok and m["state_bytes"] < STATE_BUDGET_B and state_ratio <= FLAT_LIMIT, note=note))
        events_ratio = m["events_bytes_per_iteration"] / base["events_bytes_per_iteration"]
        kept = max((r["result_json_bytes"] for r in m["results"]), default=0)
        rows.append(Row("state", f"events-table bytes per iteration, stdout {_size_label(size)}",
                        m["events_bytes_per_iteration"], "B", base["events_bytes_per_iteration"],
                        f"at {_size_label(sizes[0])}", target=f"flat (<= {FLAT_LIMIT}x)",
                        met=ok and events_ratio <= FLAT_LIMIT,
                        note=f"largest row {m['largest_event_bytes']:,} B; result JSON in the volume {kept:,} B"))
    return result
