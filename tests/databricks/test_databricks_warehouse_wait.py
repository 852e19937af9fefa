"""Waiting for a starting SQL warehouse: its own setting, a progress message while PENDING, a timeout naming it.

The fake keeps new statements PENDING for ``faults.warehouse_pending_polls`` polls (a warehouse starting); a
virtual clock advanced by the engine's sleeps stands for minutes of waiting.
"""

from __future__ import annotations

import pytest

from reference_agent.backends.databricks.config import DatabricksSettings, add_cli_arguments
from reference_agent.backends.databricks.errors import DatabricksConfigError, DatabricksTimeoutError
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.storage.databricks_engine import DatabricksSqlEngine


class VirtualTime:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _engine(client, settings, time: VirtualTime, messages: list[str], **options) -> DatabricksSqlEngine:
    return DatabricksSqlEngine(client, settings.warehouse_id, backoff=Backoff(initial_s=5.0, factor=1.0, max_s=5.0),
                               sleep=time.sleep, clock=time.clock, on_wait=messages.append, **options)


def test_a_slow_start_is_waited_for_with_progress_every_n_seconds(client, settings, fake) -> None:
    time, messages = VirtualTime(), []
    engine = _engine(client, settings, time, messages, warehouse_wait_s=600.0, progress_every_s=20.0, timeout_s=1.0)
    fake.faults.warehouse_pending_polls = 24  # two minutes of 5 s polls: longer than timeout_s, which is for RUNNING
    assert engine.execute("SELECT :x", {"x": "up"}) == [("up",)]
    assert 5 <= len(messages) <= 6  # every 20 s of the ~120 s
    assert all(f"waiting for SQL warehouse {settings.warehouse_id!r} to start" in m for m in messages)
    assert "PENDING for 20 s" in messages[0] and "giving up after 600 s" in messages[0]
    assert "RLM_DATABRICKS_WAREHOUSE_WAIT_S" in messages[0]


def test_a_warehouse_that_never_starts_is_a_timeout_naming_the_setting(client, settings, fake) -> None:
    time, messages = VirtualTime(), []
    engine = _engine(client, settings, time, messages, warehouse_wait_s=60.0, progress_every_s=15.0)
    fake.faults.warehouse_pending_polls = 10_000
    with pytest.raises(DatabricksTimeoutError, match=r"warehouse .* did not start.*PENDING for 6\d s \(the limit is "
                                                     r"60 s\).*cancelled.*RLM_DATABRICKS_WAREHOUSE_WAIT_S"):
        engine.execute("SELECT 1")
    assert 60.0 <= time.now < 70.0 and len(messages) == 3  # at 15, 30 and 45 s
    (statement,) = fake.sql.statements.values()
    assert statement.state == "CANCELED"


def test_no_progress_message_when_the_warehouse_is_up(client, settings, fake) -> None:
    time, messages = VirtualTime(), []
    assert _engine(client, settings, time, messages).execute("SELECT 1") == [(1,)]
    assert messages == []


def test_the_wait_is_a_setting_an_environment_variable_and_a_flag() -> None:
    import argparse

    assert DatabricksSettings().warehouse_wait_s == 600.0
    assert DatabricksSettings.from_env({"RLM_DATABRICKS_WAREHOUSE_WAIT_S": "900"}).warehouse_wait_s == 900.0
    parser = argparse.ArgumentParser()
    add_cli_arguments(parser)
    args = parser.parse_args(["--databricks-warehouse-wait", "1200"])
    assert DatabricksSettings.from_env({"RLM_DATABRICKS_WAREHOUSE_WAIT_S": "900"}, args=args).warehouse_wait_s == 1200
    for bad in ("soon", "0", "-5", "inf"):
        with pytest.raises(DatabricksConfigError, match="RLM_DATABRICKS_WAREHOUSE_WAIT_S"):
            DatabricksSettings.from_env({"RLM_DATABRICKS_WAREHOUSE_WAIT_S": bad})


def test_the_services_pass_the_wait_to_the_engine(fake) -> None:
    from reference_agent.backends.databricks import build_databricks_services
    from reference_agent.config import AgentSettings

    settings = DatabricksSettings(host=fake.host, token=fake.token, warehouse_id="fakewarehouse0001", catalog="main",
                                  schema="rlm", volume="vol", cluster_id="c", warehouse_wait_s=42.0)
    services = build_databricks_services(AgentSettings(), settings, sub_lm=None, hermetic=True)
    try:
        assert services.engine.warehouse_wait_s == 42.0
    finally:
        services.close()


def test_the_harness_says_a_live_wait_on_the_console(capsys) -> None:
    from reference_agent.conformance.databricks import say_progress

    say_progress("waiting for SQL warehouse 'w' to start")
    assert capsys.readouterr().err == "databricks: waiting for SQL warehouse 'w' to start\n"
