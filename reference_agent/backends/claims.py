"""A local Job_B a crashed agent left running: found by its claim, waited for, its result adopted.

The agent's process can die while Job_B runs; Job_B runs in its own process group and finishes anyway, writing
its result seconds later. A retry of the delegation in that window finds no result yet and would run the code a
second time. So, for a delegation (``JobRequest.delegation_id``), the local runner writes a claim beside the
result path naming the process group that runs the block (``<result>.claim``: ``{"pgid": N}``) and removes it
when the run is over. A retry that finds a claim whose group is still alive waits for that result (at most the
run's hard limit) and adopts it; a claim whose group is gone is stale.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from ..executor.files import write_atomic

POLL_S = 0.1


def claim_path(result_path: Path) -> Path:
    return result_path.with_name(result_path.name + ".claim")


def write_claim(result_path: Path, pgid: int) -> None:
    write_atomic(claim_path(result_path), json.dumps({"pgid": pgid}).encode("utf-8"))


def drop_claim(result_path: Path) -> None:
    claim_path(result_path).unlink(missing_ok=True)


def live_claim(result_path: Path) -> int | None:
    """The process group of a claim whose group still has a member, else None (no claim, or a stale one)."""
    try:
        pgid = int(json.loads(claim_path(result_path).read_text(encoding="utf-8"))["pgid"])
        os.killpg(pgid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pgid


async def wait_for_claimed_run(result_path: Path, *, limit_s: float) -> None:
    """Wait while a live claim's group runs and its result is not there, at most ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and not result_path.exists() and live_claim(result_path) is not None:
        await asyncio.sleep(POLL_S)
