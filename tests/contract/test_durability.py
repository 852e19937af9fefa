"""Durability: a DuckDB session file whose writer was SIGKILLed mid-run holds every acknowledged event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reference_agent.sessions.delta_session_service import DeltaSessionService

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("durability_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _kill_after(path: Path, acks_wanted: int, delay: float) -> list[int]:
    """Run the child until it has acknowledged ``acks_wanted`` events, wait ``delay``, SIGKILL it; return all acks."""
    child = subprocess.Popen([sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT)
    acked: list[int] = []
    try:
        deadline = time.monotonic() + 30
        for line in child.stdout:
            if line.startswith("ACK "):
                acked.append(int(line.split()[1]))
                if len(acked) >= acks_wanted:
                    break
            assert time.monotonic() < deadline, "the child acknowledged too slowly"
        assert len(acked) >= acks_wanted, f"the child exited early: {child.stderr.read()[-2000:]}"
        time.sleep(delay)  # let it get into the middle of the next append(s)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        rest = child.stdout.read()  # acks printed before the kill but not yet read
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    acked += [int(line.split()[1]) for line in rest.splitlines() if line.startswith("ACK ")]
    return acked


@pytest.mark.parametrize(("acks", "delay"), [(20, 0.0), (33, 0.003), (47, 0.011)])
async def test_every_acknowledged_event_survives_sigkill(tmp_path, acks, delay):
    path = tmp_path / "sessions.duckdb"
    acked = _kill_after(path, acks, delay)
    assert acked == list(range(len(acked))) and len(acked) >= acks

    service = DeltaSessionService.duckdb(path)  # reopen: must load without error
    try:
        session = await service.get_session(app_name="durability", user_id="u", session_id="s")
        assert session is not None, "the session row was lost"
        texts = [e.content.parts[0].text for e in session.events]
        stored = len(texts)
        assert stored >= len(acked), f"acknowledged {len(acked)} events, only {stored} survived the SIGKILL"
        assert texts == [f"e{n}" for n in range(stored)], "events are out of order or have gaps"
        assert session.state["last"] == stored - 1 and session.state["user:last"] == stored - 1
        assert all(session.state[f"k{n}"] == n for n in acked), "an acknowledged state key was lost"
        rows = await service.persisted_rows(app_name="durability", user_id="u", session_id="s")
        assert rows.version == stored, "the session version and the stored events disagree"
    finally:
        service.close()
