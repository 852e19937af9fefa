"""The session-service gate as a team uses it: a factory returning one of ADK's own services — correct services —
passes every reference scenario whose state a cleared key touches, on whichever None semantics the service has.

ADK's services keep a cleared key as null (in-memory, DatabaseSessionService); the reference store deletes it.
That difference is judged once, by ``none_deletes`` and the probe, never again by each scenario's expectations
and snapshot (they failed ``final_answer_then_new_turn`` and ``model_error_then_next_turn`` on ADK's services).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

pytestmark = pytest.mark.slow
CLEARING = ("final_answer_then_new_turn", "model_error_then_next_turn")


def sqlite_sessions(folder: Path):
    """What a team's factory looks like: ADK's DatabaseSessionService on a SQLite file in the run's folder."""
    from google.adk.sessions import DatabaseSessionService

    return DatabaseSessionService(f"sqlite+aiosqlite:///{folder / 'sessions.db'}")


@pytest.mark.parametrize("service", ["google.adk.sessions:InMemorySessionService",
                                     "tests.harness.test_gate_on_adk_services:sqlite_sessions"])
def test_adks_own_services_pass_the_reference_scenarios(service: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--session-service", service, "--reports-dir", str(tmp_path), "--no-progress", "-j", "1"]
    for name in CLEARING:
        argv += ["--scenario", name]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 failed" in out
