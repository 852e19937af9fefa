"""SQL results over the INLINE limit come through EXTERNAL_LINKS, chunk by chunk, as the Statement Execution API
documents: the fake fails an INLINE statement over its (here small) byte limit with "Inline byte limit exceeded",
serves EXTERNAL_LINKS chunks from presigned URLs on another loopback origin that refuses the workspace's
``Authorization`` header, and the engine asks again for links, downloads them without workspace auth, follows
``next_chunk_index`` and renews an expired link. vcrpy records and replays the downloads under a placeholder host.
"""

from __future__ import annotations

import logging

import pytest
import requests
import yaml
from databricks.sdk.service.sql import Disposition, Format, StatementState

from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
from harness.databricks_fake.cassettes import LINKS_HOST, PUBLIC_HOST, make_workspace_vcr
from harness.databricks_fake.links import ResultLinks
from harness.llm.cassettes import use_cassette
from harness.llm.network_guard import block_network
from reference_agent.backends.databricks.config import DatabricksSettings, make_workspace_client
from reference_agent.backends.databricks.errors import DatabricksSqlError
from reference_agent.storage.databricks_engine import DatabricksSqlEngine

ROWS = 10
SQL = "SELECT i, repeat('x', 40) AS pad FROM range(:n) AS t(i) ORDER BY i"
EXPECTED = [(i, "x" * 40) for i in range(ROWS)]
LIMIT = 200  # bytes: ten 40-character rows are ~500 bytes of JSON


def _statements(fake: FakeWorkspace) -> list[tuple[str, str]]:
    return [(m, t) for m, t in fake.requests if t.startswith("/api/2.0/sql/statements")]


def test_an_inline_statement_over_the_limit_fails_as_documented(client, fake) -> None:
    fake.sql.inline_byte_limit = LIMIT
    response = client.statement_execution.execute_statement(
        statement="SELECT repeat('x', 300) AS big", warehouse_id=DEFAULT_WAREHOUSE, disposition=Disposition.INLINE,
        format=Format.JSON_ARRAY, wait_timeout="10s")
    assert response.status.state is StatementState.FAILED and response.result is None
    assert response.status.error.error_code.value == "BAD_REQUEST"
    assert response.status.error.message.startswith(
        f"Inline byte limit exceeded. Statements executed with disposition=INLINE can have a result size of at most "
        f"{LIMIT} bytes. Please execute the statement with disposition=EXTERNAL_LINKS")
    small = client.statement_execution.execute_statement(statement="SELECT 1", warehouse_id=DEFAULT_WAREHOUSE)
    assert small.status.state is StatementState.SUCCEEDED and small.result.data_array == [["1"]]


def test_a_large_result_is_read_through_external_links_across_chunks(engine, fake) -> None:
    fake.sql.inline_byte_limit = LIMIT
    assert engine.execute(SQL, {"n": ROWS}) == EXPECTED
    posts = [t for m, t in _statements(fake) if m == "POST"]
    assert len(posts) == 2  # the INLINE attempt, then the same statement for links
    chunk_fetches = [t for m, t in _statements(fake) if "/result/chunks/" in t]
    assert len(chunk_fetches) == 3  # ten rows, three a chunk: chunks 1..3 after the first response's chunk 0
    downloads = fake.links.requests
    assert len(downloads) == 4 and all("authorization" not in headers for _, headers in downloads)


def test_a_small_result_stays_inline(engine, fake) -> None:
    assert engine.execute(SQL, {"n": 2}) == EXPECTED[:2]
    assert [m for m, _ in _statements(fake)].count("POST") == 1 and fake.links.requests == []


def test_the_links_refuse_the_workspace_credential_and_unknown_signatures(fake) -> None:
    published = fake.links.publish("s/0", b"[]")
    assert requests.get(published["external_link"], timeout=10).json() == []
    refused = requests.get(published["external_link"], headers={"Authorization": f"Bearer {fake.token}"}, timeout=10)
    assert refused.status_code == 400 and b"Only one auth mechanism" in refused.content
    forged = requests.get(published["external_link"].rsplit("=", 1)[0] + "=0000", timeout=10)
    assert forged.status_code == 403


def test_an_expired_link_is_renewed_once(engine, fake, monkeypatch) -> None:
    fake.sql.inline_byte_limit = LIMIT
    real_answer = ResultLinks.answer
    refused = []

    def first_download_expired(self, path, headers):
        if not refused:
            refused.append(path)
            return 403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
        return real_answer(self, path, headers)

    monkeypatch.setattr(ResultLinks, "answer", first_download_expired)
    assert engine.execute(SQL, {"n": ROWS}) == EXPECTED
    assert refused and sum("/result/chunks/0" in t for _, t in _statements(fake)) == 1  # chunk 0 asked for again


def test_links_that_keep_failing_are_an_error_naming_the_chunk_not_the_url(engine, fake) -> None:
    fake.sql.inline_byte_limit = LIMIT
    fake.links.ttl_s = -1.0  # every link is born expired
    with pytest.raises(DatabricksSqlError, match=r"result chunk 0 of SQL statement fake-stmt-\d+ .*HTTP 403 from "
                                                 r"127\.0\.0\.1.*Request has expired") as caught:
        engine.execute(SQL, {"n": ROWS})
    assert "X-Fake-Signature" not in str(caught.value)


def _run(host: str, token: str) -> list[tuple]:
    client = make_workspace_client(DatabricksSettings(host=host, token=token), hermetic=True)
    return DatabricksSqlEngine(client, DEFAULT_WAREHOUSE, sleep=lambda s: None).execute(SQL, {"n": ROWS})


def test_downloads_are_recorded_under_a_placeholder_and_replayed(tmp_path, caplog) -> None:
    cassettes = tmp_path / "cassettes"
    with FakeWorkspace(tmp_path / "ws", chunk_rows=4, inline_byte_limit=LIMIT) as fake:
        token, links_origin = fake.token, fake.links.origin
        key = "c2VjcmV0LWRlY3J5cHRpb24ta2V5"
        fake.links.required_headers = {"x-amz-server-side-encryption-customer-key": key}  # the link's http_headers
        recorder = make_workspace_vcr(cassette_dir=cassettes, record_mode="all", fake_origin=fake.host,
                                      secrets=[token])
        with use_cassette(recorder, "large_result"):
            assert _run(fake.host, token) == EXPECTED
    text = (cassettes / "large_result.yaml").read_text(encoding="utf-8")
    assert links_origin not in text and "127.0.0.1" not in text and "X-Fake-Signature" not in text
    assert key not in text  # scrubbed in the links' http_headers and in the downloads' request headers
    interactions = yaml.safe_load(text)["interactions"]
    uris = [i["request"]["uri"] for i in interactions]
    assert all(i["request"]["headers"]["x-amz-server-side-encryption-customer-key"] == ["<scrubbed>"]
               for i in interactions if i["request"]["uri"].startswith(LINKS_HOST))
    downloads = [u for u in uris if u.startswith(LINKS_HOST)]
    assert len(downloads) == 3 and len(set(downloads)) == 3  # ten rows, four a chunk

    replay = make_workspace_vcr(cassette_dir=cassettes, record_mode="none", fake_origin=PUBLIC_HOST, secrets=[token])
    caplog.set_level(logging.WARNING, logger="databricks.sdk")
    with block_network(), use_cassette(replay, "large_result") as cassette:
        assert _run(PUBLIC_HOST, token) == EXPECTED
    assert cassette.all_played


@pytest.mark.slow
def test_a_live_scenario_with_large_reads_records_its_downloads_and_replays(tmp_path) -> None:
    """A whole scenario whose session reads exceed a small inline limit: the live cassette replays offline."""
    from pathlib import Path

    from harness.checks.base import Status
    from harness.llm.modes import LlmMode
    from harness.run.runner import RunOptions, run_scenario
    from harness.scenario.loader import load_scenarios

    root = Path(__file__).resolve().parents[2]
    scenario = next(s for s in load_scenarios(root / "scenarios") if s.name == "single_delegation")
    token = "dapi" + "0f1e2d3c4b5a6978" * 2
    with FakeWorkspace(tmp_path / "ws", token=token, complete_runs_on_submit=True, inline_byte_limit=2_000) as fake:
        real = DatabricksSettings(host=fake.host, token=token, warehouse_id=DEFAULT_WAREHOUSE, catalog="acme",
                                  schema="analytics", volume="scratch", cluster_id="0612-123456-abcdefgh",
                                  retry_timeout_s=10)
        recorded = run_scenario(scenario, RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, record=True,
                                                     cassette_dir=tmp_path / "c", databricks_live=True,
                                                     databricks=real))
        downloads = len(fake.links.requests)
    assert recorded.error is None, recorded.error
    assert not [c.name for c in recorded.checks if c.status is Status.FAIL]
    assert downloads > 0, downloads  # some reads went over the limit
    text = (tmp_path / "c" / "databricks" / "single_delegation.yaml").read_text(encoding="utf-8")
    assert text.count(LINKS_HOST) >= 2 * downloads and "127.0.0.1" not in text  # each link: answer + download

    replayed = run_scenario(scenario, RunOptions(backend="databricks", llm_mode=LlmMode.REPLAY,
                                                 cassette_dir=tmp_path / "c"))
    assert replayed.error is None, replayed.error
    assert not [c.name for c in replayed.checks if c.status is Status.FAIL]
