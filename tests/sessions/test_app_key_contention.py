"""What a shared ``app:`` key costs (docs/session-store.md, bench/contention.py): writers incrementing one key at
once get ``StaleSessionError`` instead of losing increments; with a retry every increment lands, without one (ADK's
Runner) the stale turns are lost — and in both the counter equals the increments acknowledged."""

from __future__ import annotations

from bench.contention import contend
from reference_agent.sessions import DeltaSessionService


async def test_concurrent_increments_of_one_app_key_are_stale_never_lost(tmp_path) -> None:
    service = DeltaSessionService.duckdb(tmp_path / "store.duckdb")
    try:
        retried = await contend(service, 4, 5, think_s=0.002, retry=True)
        assert retried["landed"] == retried["final"] == 20 and retried["stale"] > 0
        once = await contend(service, 4, 5, think_s=0.002, retry=False)
        assert once["landed"] + once["lost_turns"] == 20 and once["lost_turns"] == once["stale"] > 0
        assert once["final"] == once["landed"]
    finally:
        service.close()
