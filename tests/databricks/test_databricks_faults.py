"""Each fault switch of the fake workspace gives the backend's clear error (401, 404 warehouse, warehouse starting)."""

from __future__ import annotations

import pytest

from reference_agent.backends.databricks.errors import (
    DatabricksAuthError,
    DatabricksConfigError,
    DatabricksTimeoutError,
)
from reference_agent.backends.jobs import JobRequest
from reference_agent.storage.databricks_engine import DatabricksSqlEngine

CLEAR_401 = r"(?s)HTTP 401.*DATABRICKS_TOKEN.*expired"


async def test_expired_token_is_a_clear_error_everywhere(fake, engine, volume, runner) -> None:
    fake.faults.expired_token = True
    with pytest.raises(DatabricksAuthError, match=CLEAR_401):
        engine.execute("SELECT 1")
    with pytest.raises(DatabricksAuthError, match=CLEAR_401):
        volume.write_text(volume.path("x.txt"), "x")
    with pytest.raises(DatabricksAuthError, match=CLEAR_401):
        volume.exists(volume.path("x.txt"))
    with pytest.raises(DatabricksAuthError, match=CLEAR_401):
        await runner.run(JobRequest(artifact_path=volume.path("a.py"), run_id="r", iteration=1), sub_lm=None)


def test_wrong_token_is_rejected_like_an_expired_one(client, fake, settings) -> None:
    fake.token = "dapi" + "f" * 32
    with pytest.raises(DatabricksAuthError, match=CLEAR_401):
        DatabricksSqlEngine(client, settings.warehouse_id).execute("SELECT 1")


def test_missing_warehouse_names_the_setting(client) -> None:
    with pytest.raises(DatabricksConfigError, match=r"warehouse 'nope' was not found.*DATABRICKS_WAREHOUSE_ID"):
        DatabricksSqlEngine(client, "nope").execute("SELECT 1")


def test_starting_warehouse_is_polled_with_backoff(engine, fake, sleeps) -> None:
    fake.faults.warehouse_pending_polls = 3
    assert engine.execute("SELECT :x", {"x": "ready"}) == [("ready",)]
    assert len(sleeps.calls) == 3 and sleeps.calls == sorted(sleeps.calls)  # growing delays
    assert sum(1 for m, t in fake.requests if m == "GET" and t.startswith("/api/2.0/sql/statements/")) == 3


def test_warehouse_still_starting_past_the_timeout_is_cancelled(client, settings, fake) -> None:
    clock = [0.0]

    def virtual_sleep(seconds: float) -> None:
        clock[0] += seconds

    engine = DatabricksSqlEngine(client, settings.warehouse_id, warehouse_wait_s=30.0, sleep=virtual_sleep,
                                 clock=lambda: clock[0])
    fake.faults.warehouse_pending_polls = 10_000
    with pytest.raises(DatabricksTimeoutError, match=r"warehouse .* did not start.*PENDING for 3\d s.*cancelled.*"
                                                     r"RLM_DATABRICKS_WAREHOUSE_WAIT_S / --databricks-warehouse-wait"):
        engine.execute("SELECT 1")
    (statement,) = fake.sql.statements.values()
    assert statement.state == "CANCELED" and clock[0] >= 30.0
    assert any(m == "POST" and t.endswith("/cancel") for m, t in fake.requests)
