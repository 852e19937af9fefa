"""The store readers: layouts told from their columns, sessions and events as stored, filters, read-only,
Databricks through the fake workspace, and flat memory on a store of thousands of sessions."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import tracemalloc
from pathlib import Path

import duckdb
import pytest

from harness.audit.checks import run_audit_checks
from harness.audit.stores import SessionFilter, StoreError, open_store
from harness.cli import main
from harness.targets.profile import TargetProfile
from tests.audit.seed_store import seed_store
from tests.audit.writers import APP, BASE, adk_sqlite_store, rlm_duckdb_store, write_sessions

AUTHORS = ["user", "databricks_analyst", "databricks_analyst", "job_builder", "results_processor", "run_conversation"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("read")
    return {"adk": asyncio.run(adk_sqlite_store(folder / "adk.db", 4)),
            "rlm": asyncio.run(rlm_duckdb_store(folder / "rlm.duckdb", 4)),
            "seed": seed_store(folder / "seed.duckdb", 3, deleted=1)}


@pytest.mark.parametrize("layout", ["adk", "rlm", "seed"])
def test_each_layout_reads_sessions_as_stored(layout: str, stores: dict[str, str]) -> None:
    with open_store(stores[layout]) as store:
        assert store.layout.name == layout
        sessions = list(store.sessions())
    assert [s.session_id for s in sessions][:3] == ["s-00000", "s-00002", "s-00001"][: 3]  # key order
    first = sessions[0]
    assert first.layout == layout and first.key == f"{APP}/user-0/s-00000"
    assert [e.author for e in first.events] == AUTHORS
    assert [e.position for e in first.events] == list(range(6))
    assert first.events[1].function_calls == ("delegate_code_results",)
    assert first.events[2].function_responses == ("delegate_code_results",)
    assert first.events[0].has_content and first.events[5].has_content
    assert first.events[5].state_delta == {"rlm:final_answer": "3", "user:rlm:history": [{"q": "rows?", "a": "3"}]}
    assert not any(k.startswith("temp:") for e in first.events for k in e.state_delta)  # trimmed by the service
    assert first.state["rlm:last_results_summary"] == "The orders table has 3 rows."
    assert first.user_state == {"rlm:history": [{"q": "rows?", "a": "3"}]}
    assert abs(first.update_time - BASE) < 10 if layout == "seed" else first.update_time > 0
    assert first.events[0].timestamp == BASE
    expected = {"adk": (False, None, None), "rlm": (True, 6, [1, 2, 3, 4, 5, 6]),
                "seed": (True, 7, [2000, 3000, 4000, 5000, 6000, 7000])}[layout]
    assert (first.nulls_are_deletes, first.version, [e.seq for e in first.events] if layout != "adk" else None) \
        == expected
    assert first.row == f"sessions row app={APP} user=user-0 id=s-00000"
    assert first.events[3].row.startswith("events row id=")


def test_seed_layout_skips_soft_deleted_sessions_and_rewound_events(stores: dict[str, str], tmp_path: Path) -> None:
    with open_store(stores["seed"]) as store:
        assert len(list(store.sessions())) == 3  # the fourth is is_deleted
    path = tmp_path / "rewound.duckdb"
    seed_store(path, 1)
    with duckdb.connect(str(path)) as db:
        db.execute("UPDATE events SET is_after_rewind = TRUE WHERE sequence_num > 5000")
    with open_store(str(path)) as store:
        (session,) = store.sessions()
    assert len(session.events) == 4 and session.extra["rewound_events"] == 2


def test_seed_store_audits_clean_and_flags_an_injected_temp_key(stores: dict[str, str], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", stores["seed"], "--profile", "reference", "--json"]) == 0
    capsys.readouterr()
    path = tmp_path / "seed.duckdb"
    seed_store(path, 2)
    with duckdb.connect(str(path)) as db:
        db.execute("""UPDATE events SET state_delta_json = json_merge_patch(state_delta_json,
                      '{"temp:rlm:stage": "executed"}') WHERE session_id = 's-00001' AND author = 'job_builder'""")
    assert main(["audit", str(path), "--profile", "reference", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    failed = {(r["scenario"], c["name"]) for r in report["results"] for c in r["checks"] if c["status"] == "fail"}
    assert failed == {(f"{APP}/user-1/s-00001", "no_temp_persisted")}


def test_a_none_delta_of_ours_reads_as_a_deletion(tmp_path: Path) -> None:
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions

    from reference_agent.sessions import DeltaSessionService

    async def write() -> None:
        service = DeltaSessionService.duckdb(tmp_path / "del.duckdb")
        session = await service.create_session(app_name=APP, user_id="u", session_id="s")
        for delta in ({"rlm:exit_requested": True, "app:rlm:snippets": ["x"]}, {"rlm:exit_requested": None}):
            await service.append_event(session, Event(invocation_id="i", author="exit_loop",
                                                      actions=EventActions(state_delta=delta)))
        service.close()

    asyncio.run(write())
    with open_store(str(tmp_path / "del.duckdb")) as store:
        (session,) = store.sessions()
    assert [e.state_delta for e in session.events] == [{"rlm:exit_requested": True, "app:rlm:snippets": ["x"]},
                                                      {"rlm:exit_requested": None}]
    assert session.state == {} and session.app_state["rlm:snippets"] == ["x"]
    assert all(r.status.value != "fail" for r in run_audit_checks(session, TargetProfile()))


@pytest.mark.parametrize("layout", ["adk", "rlm"])
def test_filters_select_by_app_user_session_and_update_time(layout: str, stores: dict[str, str]) -> None:
    def ids(**kw: object) -> list[str]:
        with open_store(stores[layout]) as store:
            return [s.session_id for s in store.sessions(SessionFilter(**kw), page_size=2)]

    assert ids() == ["s-00000", "s-00002", "s-00001", "s-00003"]  # pages of 2 walk the whole store
    assert ids(user="user-1") == ["s-00001", "s-00003"]
    assert ids(session="s-00002") == ["s-00002"]
    assert ids(app="other") == []
    with open_store(stores[layout]) as store:
        times = {s.session_id: s.update_time for s in store.sessions()}
    middle = sorted(times.values())[1]
    assert set(ids(since=middle)) == {k for k, t in times.items() if t >= middle}
    assert set(ids(until=middle)) == {k for k, t in times.items() if t <= middle}


def test_time_flags_take_epoch_seconds_or_iso(stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", stores["rlm"], "--since", "2100-01-01T00:00:00", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []
    assert main(["audit", stores["rlm"], "--since", "0", "--until", "4102444800", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["results"]) == 4
    assert main(["audit", stores["rlm"], "--app", APP, "--user", "user-1", "--session", "s-00003", "--json"]) == 0
    assert [r["scenario"] for r in json.loads(capsys.readouterr().out)["results"]] == [f"{APP}/user-1/s-00003"]


def test_the_profile_defaults_to_the_project_table_else_neutral(stores: dict[str, str], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from reference_agent.conformance.profile import PROFILE_PATH

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert main(["audit", stores["rlm"], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extra"]["profile"] == "neutral"
    assert {c["name"]: c["status"] for c in report["results"][0]["checks"]}["summary_persisted"] == "n/a"
    (tmp_path / "pyproject.toml").write_text(f"[tool.rlm-conformance]\nprofile = '{PROFILE_PATH}'\n")
    assert main(["audit", stores["rlm"], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extra"]["profile"] == str(PROFILE_PATH)
    assert {c["name"]: c["status"] for c in report["results"][0]["checks"]}["summary_persisted"] == "pass"


def _fingerprint(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("layout", ["adk", "rlm"])
def test_the_audit_is_read_only(layout: str, stores: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(stores[layout].removeprefix("sqlite:///"))
    before = _fingerprint(path)
    assert main(["audit", stores[layout], "--json"]) == 0
    capsys.readouterr()
    with open_store(stores[layout]) as store:
        with pytest.raises(StoreError, match="read"):
            store.source.rows("UPDATE sessions SET user_id = 'x'", {})
        with pytest.raises(StoreError):
            store.source.rows("CREATE TABLE intruder (x INT)", {})
    assert _fingerprint(path) == before
    if layout == "adk":
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM sessions WHERE user_id = 'x'").fetchone() == (0,)


def test_adk_legacy_schema_v0_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "v0.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sessions (app_name, user_id, id, state, create_time, update_time)")
        db.execute("CREATE TABLE events (id, app_name, user_id, session_id, invocation_id, author, actions)")
    with pytest.raises(StoreError, match=r"schema v0.*adk migrate session"):
        open_store(f"sqlite:///{path}")


def test_databricks_catalog_schema_on_the_fake_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("databricks.sdk")
    from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
    from reference_agent.backends.databricks.config import DatabricksSettings, make_workspace_client
    from reference_agent.sessions import DeltaSessionService
    from reference_agent.storage.databricks_engine import DatabricksSqlEngine

    with FakeWorkspace(tmp_path / "ws", chunk_rows=4) as fake:
        settings = DatabricksSettings(host=fake.host, token=fake.token, warehouse_id=DEFAULT_WAREHOUSE,
                                      catalog="main", schema="rlm")
        engine = DatabricksSqlEngine(make_workspace_client(settings, hermetic=True), DEFAULT_WAREHOUSE,
                                     catalog="main", schema="rlm", sleep=lambda s: None)
        asyncio.run(write_sessions(DeltaSessionService(engine), 2))
        for name in ("DATABRICKS_CONFIG_PROFILE", "DATABRICKS_CONFIG_FILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("DATABRICKS_HOST", fake.host)
        monkeypatch.setenv("DATABRICKS_TOKEN", fake.token)
        monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", DEFAULT_WAREHOUSE)
        assert main(["audit", "databricks://main.rlm", "--profile", "reference", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["extra"]["store"] == "databricks://main.rlm" and len(report["results"]) == 2
        assert report["extra"]["layout"].startswith("rlm")
        engine.execute("UPDATE sessions SET state_json = :s WHERE id = 's-00001'",
                       {"s": json.dumps({"rlm:iteration": 1, "temp:rlm:code": "print(1)"})})
        assert main(["audit", "databricks://main.rlm", "--profile", "reference", "--json"]) == 1
        report = json.loads(capsys.readouterr().out)
        failed = {(r["scenario"], c["name"]) for r in report["results"] for c in r["checks"] if c["status"] == "fail"}
        assert ("rlm_app/user-1/s-00001", "no_temp_persisted") in failed
        assert main(["audit", "dbx:main.rlm", "--session", "s-00000", "--json"]) == 0  # the short spelling
        assert len(json.loads(capsys.readouterr().out)["results"]) == 1
        assert main(["audit", "databricks://nodot"]) == 2
        assert "databricks://CATALOG.SCHEMA" in capsys.readouterr().err


# --- a store of thousands of sessions: flat memory --------------------------------------------------------------

def big_rlm_store(path: Path, sessions: int) -> str:
    """``sessions`` sessions of three events each in our layout, written with direct INSERTs (seconds, not
    minutes): the user asks, the analyst sets rlm:iteration, the conversation runner the final answer."""
    from reference_agent.sessions.schema import ensure_schema
    from reference_agent.storage.duckdb_engine import DuckDBEngine

    engine = DuckDBEngine(path)
    ensure_schema(engine)
    engine.close()
    with duckdb.connect(str(path)) as db:
        db.execute(f"""INSERT INTO sessions SELECT 'app', 'u' || (i % 50), 's' || lpad(i::VARCHAR, 6, '0'),
            '{{"rlm:iteration": 1, "rlm:final_answer": "answer ' || i || '"}}', 3, {BASE} + i, {BASE} + i + 3,
            NULL, NULL, NULL, NULL FROM range({sessions}) t(i)""")
        answer = """'{"rlm:final_answer": "answer ' || i || '"}'"""  # SQL: a delta per session
        steps = [(1, "user", "'{}'", "question"), (2, "databricks_analyst", """'{"rlm:iteration": 1}'""", "code"),
                 (3, "run_conversation", answer, "answer")]
        for seq, author, delta, text in steps:
            payload = json.dumps({"content": {"parts": [{"text": text}]}})
            db.execute(f"""INSERT INTO events SELECT 'app', 'u' || (i % 50), 's' || lpad(i::VARCHAR, 6, '0'),
                'e' || i || '-{seq}', {seq}, 'inv' || i, '{author}', {BASE} + i + {seq}, {delta}, '[]',
                '{payload}' FROM range({sessions}) t(i)""")
    return str(path)


def audited_peak(store_spec: str) -> tuple[int, int]:
    """(sessions audited, tracemalloc peak in bytes) streaming the store through the checks, keeping nothing."""
    profile = TargetProfile()
    count = 0
    tracemalloc.start()
    try:
        with open_store(store_spec) as store:
            for session in store.sessions():
                assert not any(r.failed for r in run_audit_checks(session, profile)), session.key
                count += 1
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_stays_flat_as_the_store_grows_tenfold(tmp_path: Path) -> None:
    small = audited_peak(big_rlm_store(tmp_path / "small.duckdb", 150))
    large = audited_peak(big_rlm_store(tmp_path / "large.duckdb", 1500))
    print(f"tracemalloc peak: {small[0]} sessions {small[1] / 1024:.0f} KiB; "
          f"{large[0]} sessions {large[1] / 1024:.0f} KiB; ratio {large[1] / small[1]:.2f}")
    assert (small[0], large[0]) == (150, 1500)
    # 1.09x measured; a leak of 1 KiB a session would make it ~1.6x (the bound was 2x at 300 and 3,000 sessions)
    assert large[1] < 1.5 * small[1]


def test_store_spellings_of_one_sqlite_file(stores: dict[str, str], tmp_path: Path) -> None:
    path = stores["adk"].removeprefix("sqlite:///")
    for spelling in (stores["adk"], f"sqlite+aiosqlite:///{path}", path, f"sqlite:///file:{path}?mode=rw&uri=true"):
        with open_store(spelling) as store:  # ADK's async URL, a bare path, a URI asking for rw: all read-only
            assert store.layout.name == "adk" and len(list(store.sessions())) == 4
            with pytest.raises(StoreError):
                store.source.rows("DELETE FROM events", {})
    rlm = stores["rlm"]
    with open_store(f"duckdb:///{rlm}") as store:
        assert store.layout.name == "rlm" and store.where == f"duckdb:///{rlm}"
    with pytest.raises(StoreError, match="in-memory"):
        open_store("sqlite://")
