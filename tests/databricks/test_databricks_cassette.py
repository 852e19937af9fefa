"""Record one SQL round trip against the fake with vcrpy, then replay it with the fake stopped."""

from __future__ import annotations

import logging

import yaml

from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
from harness.recording.databricks import (
    PUBLIC_HOST,
    RECORDED_AGAINST,
    make_workspace_vcr,
)
from harness.recording.persister import read_provenance
from harness.recording.recorder import use_cassette
from harness.llm.network_guard import block_network
from reference_agent.backends.databricks.config import (
    DatabricksSettings,
    make_workspace_client,
)
from reference_agent.storage.databricks_engine import DatabricksSqlEngine

SQL = "SELECT i, :greeting AS greeting FROM (VALUES (1), (2), (3), (4), (5)) AS t(i) WHERE i > :low ORDER BY i"
PARAMS = {"greeting": "hello", "low": 0}
EXPECTED = [(i, "hello") for i in range(1, 6)]


def run_once(host: str, token: str, sleeps: list[float]) -> list[tuple]:
    client = make_workspace_client(DatabricksSettings(host=host, token=token), hermetic=True)
    engine = DatabricksSqlEngine(client, DEFAULT_WAREHOUSE, sleep=sleeps.append)  # waiting stubbed out
    return engine.execute(SQL, PARAMS)


def test_record_against_the_fake_then_replay_without_it(tmp_path, caplog) -> None:
    cassettes = tmp_path / "cassettes"
    with FakeWorkspace(tmp_path / "ws", chunk_rows=3) as fake:
        token = fake.token
        fake.faults.warehouse_pending_polls = 1  # one PENDING poll, so replay must stub the backoff sleep
        recorder = make_workspace_vcr(cassette_dir=cassettes, record_mode="all", fake_origin=fake.host,
                                      secrets=[token])
        recorded_sleeps: list[float] = []
        with use_cassette(recorder, "sql_round_trip"):
            assert run_once(fake.host, token, recorded_sleeps) == EXPECTED
        origin = fake.host
    assert len(recorded_sleeps) == 1

    path = cassettes / "sql_round_trip.yaml"
    text = path.read_text(encoding="utf-8")
    assert token not in text and origin not in text and "127.0.0.1" not in text
    provenance = read_provenance(path)
    assert provenance is not None and provenance.recorded_against == RECORDED_AGAINST
    interactions = yaml.safe_load(text)["interactions"]
    assert [(i["request"]["method"], i["request"]["uri"].removeprefix(PUBLIC_HOST).split("?")[0])
            for i in interactions] == [
        ("GET", "/.well-known/databricks-config"),  # the SDK's Config() probe is part of the cassette
        ("POST", "/api/2.0/sql/statements"),
        ("GET", "/api/2.0/sql/statements/fake-stmt-000001"),
        ("GET", "/api/2.0/sql/statements/fake-stmt-000001/result/chunks/1"),
    ]
    assert all(i["request"]["headers"].get("Authorization") in (None, ["<scrubbed>"]) for i in interactions)

    # Replay: the fake is gone, any non-loopback connection would raise, the sleep is a no-op.
    replay = make_workspace_vcr(cassette_dir=cassettes, record_mode="none", fake_origin=PUBLIC_HOST, secrets=[token])
    replayed_sleeps: list[float] = []
    caplog.set_level(logging.WARNING, logger="databricks.sdk")
    with block_network(), use_cassette(replay, "sql_round_trip") as cassette:
        assert run_once(PUBLIC_HOST, token, replayed_sleeps) == EXPECTED
    assert cassette.all_played and cassette.play_counts[0] == 1
    assert len(replayed_sleeps) == 1
    assert not [r for r in caplog.records if "host metadata" in r.getMessage()]  # no /.well-known miss
