"""Per-run and per-session metrics (seed 004's metadata schemas, kept small).

Per iteration the result JSON already holds them (status, duration, code
blocks, every sub-LM call with batched flag, latency, sizes and tokens);
``session_totals`` folds one result into the compact session-scoped summary
``rlm:metrics`` that job_builder writes and the harness report shows.
"""

from __future__ import annotations

from typing import Any


def iteration_metrics(result: dict[str, Any]) -> dict[str, Any]:
    calls = result.get("sublm_calls") or []
    return {
        "status": result.get("status"),
        "code_blocks": int(result.get("code_blocks") or 1),
        "execution_time_s": float(result.get("duration_s") or 0.0),
        "sublm_calls": len(calls),
        "sublm_batched_calls": sum(1 for c in calls if c.get("batched")),
        "sublm_tokens": sum(int(c.get("tokens") or 0) for c in calls),
        "sublm_latency_s": round(sum(float(c.get("latency_s") or 0.0) for c in calls), 6),
        "sublm_prompt_chars": sum(int(c.get("prompt_chars") or 0) for c in calls),
        "sublm_response_chars": sum(int(c.get("response_chars") or 0) for c in calls),
    }


def session_totals(previous: dict[str, Any] | None, iteration: dict[str, Any]) -> dict[str, Any]:
    totals = dict(previous or {})
    totals["runs"] = int(totals.get("runs", 0)) + 1
    statuses = dict(totals.get("statuses") or {})
    statuses[str(iteration["status"])] = statuses.get(str(iteration["status"]), 0) + 1
    totals["statuses"] = statuses
    for key in ("code_blocks", "sublm_calls", "sublm_batched_calls", "sublm_tokens"):
        totals[key] = int(totals.get(key, 0)) + int(iteration[key])
    totals["execution_time_s"] = round(float(totals.get("execution_time_s", 0.0)) + iteration["execution_time_s"], 6)
    return totals
