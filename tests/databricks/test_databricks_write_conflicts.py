"""Delta write conflicts and dying clients on the fake workspace: the documented error shape, the engine's typed
error, and the session service's retries, StaleSessionError and roll-forward over the Statement Execution API."""

from __future__ import annotations

import pytest
from adk_compat import StaleSessionError

from reference_agent.backends.databricks.errors import DatabricksSqlError, DatabricksWriteConflictError
from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry
from reference_agent.storage import WriteConflictError
from reference_agent.storage.databricks_engine import write_conflict_class
from tests.sessions.test_session_concurrency import ev

APP = "app"
CLASSES = ["DELTA_CONCURRENT_APPEND", "DELTA_CONCURRENT_DELETE_READ", "DELTA_CONCURRENT_DELETE_DELETE",
           "DELTA_CONCURRENT_TRANSACTION", "DELTA_CONCURRENT_WRITE", "DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED"]


@pytest.mark.parametrize("error_class", CLASSES)
def test_a_conflict_arrives_as_a_failed_statement_with_the_class_and_becomes_a_typed_error(engine, fake, error_class):
    engine.execute("CREATE TABLE t (k STRING, v BIGINT) USING DELTA")
    fake.faults.conflict_on = {r"^UPDATE t\b": error_class}
    with pytest.raises(DatabricksWriteConflictError) as caught:
        engine.execute("UPDATE t SET v = 1 WHERE k = :k", {"k": "a"})
    assert caught.value.error_class == error_class
    assert isinstance(caught.value, WriteConflictError) and isinstance(caught.value, DatabricksSqlError)
    assert "SQLSTATE 2D521" in str(caught.value) and "UPDATE t SET" in str(caught.value)
    failed = list(fake.sql.statements.values())[-1].response()
    assert failed["status"]["state"] == "FAILED" and failed["status"]["sql_state"] == "2D521"
    assert failed["status"]["error"]["message"].startswith(f"[{error_class}] ")
    assert "Please try the operation again." in failed["status"]["error"]["message"]
    # It fired once and removed itself: the statement runs now.
    assert fake.faults.conflict_on == {}
    engine.execute("UPDATE t SET v = 1 WHERE k = :k", {"k": "a"})


def test_other_sql_errors_are_not_conflicts(engine, fake) -> None:
    with pytest.raises(DatabricksSqlError) as caught:
        engine.execute("SELECT * FROM nowhere")
    assert not isinstance(caught.value, WriteConflictError)
    assert write_conflict_class("[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict detected.",
                                "2D521") == "DELTA_CONCURRENT_APPEND"
    assert write_conflict_class("io.delta.exceptions.ConcurrentDeleteReadException: ...", None) == \
        "DELTA_CONCURRENT_DELETE_READ"
    assert write_conflict_class("[TABLE_OR_VIEW_NOT_FOUND] x", "42P01") is None


def test_unknown_conflict_class_in_the_faults_is_a_clear_error(engine, fake) -> None:
    fake.faults.conflict_on = {"SELECT": "DELTA_CONCURRENT_TYPO"}
    with pytest.raises(Exception, match=r"unknown Delta conflict class 'DELTA_CONCURRENT_TYPO'"):
        engine.execute("SELECT 1")


@pytest.fixture
def svc(engine) -> DeltaSessionService:
    return DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))


async def test_conflicts_on_the_session_row_are_retried_then_reported_stale(svc, fake) -> None:
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    fake.faults.conflict_on = {r"^UPDATE sessions": "DELTA_CONCURRENT_APPEND"}
    fake.faults.conflicts_per_match = 2
    await svc.append_event(s, ev({"k": 1, "user:x": 1}, "one"))  # two conflicts, third try commits
    assert (await svc.get_session(app_name=APP, user_id="u", session_id="s")).state == {"k": 1, "user:x": 1}
    fake.faults.conflict_on = {r"^UPDATE sessions": "DELTA_CONCURRENT_DELETE_READ"}
    fake.faults.conflicts_per_match = 10
    with pytest.raises(StaleSessionError):
        await svc.append_event(s, ev({"k": 2}))
    fake.faults.conflict_on = {}
    rows = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (rows.version, rows.state, len(rows.events)) == (1, {"k": 1}, 1)


async def test_two_writers_of_one_user_key_on_databricks_the_stale_one_is_refused(svc) -> None:
    a = await svc.create_session(app_name=APP, user_id="u", session_id="a")
    b = await svc.create_session(app_name=APP, user_id="u", session_id="b")
    await svc.append_event(a, ev({"user:x": 1}))
    with pytest.raises(StaleSessionError):
        await svc.append_event(b, ev({"user:x": 2}))
    await svc.append_event(b, ev({"user:y": 2}))  # another key of the same row: merged
    assert await svc.get_user_state(app_name=APP, user_id="u") == {"x": 1, "y": 2}


@pytest.mark.parametrize("k", range(8))
async def test_a_client_that_dies_after_any_statement_leaves_a_whole_session(engine, fake, k) -> None:
    writer = DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))
    s = await writer.create_session(app_name=APP, user_id="u", session_id="s")
    await writer.append_event(s, ev({"k": 1, "user:n": 1, "app:n": 1}, "e1"))
    fake.faults.fail_statements_after = k
    with pytest.raises(DatabricksSqlError, match="injected failure"):
        await writer.append_event(s, ev({"k": 2, "user:n": 2, "app:n": 2}, "e2"))
    fake.faults.fail_statements_after = None
    reader = DeltaSessionService(engine)  # another process
    got = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    texts = [e.content.parts[0].text for e in got.events]
    # 0-1 read the keys, 2-3 claim them, 4 = the session row's compare-and-set (the commit point), 5-6 write the
    # keys, 7 the event row.
    assert texts == (["e1"] if k <= 4 else ["e1", "e2"])
    n = len(texts)
    assert (got.state["k"], got.state["user:n"], got.state["app:n"]) == (n, n, n)
    # The next append of the session writes a key the dead writer may have left claimed: it fences that claim off.
    await reader.append_event(got, ev({"k": 9, "user:n": 9}, "next"))
    assert (await reader.get_session(app_name=APP, user_id="u", session_id="s")).state["user:n"] == 9
    rows = await reader.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert [e.seq for e in rows.events] == list(range(1, n + 2)) and rows.version == n + 1


async def test_a_failed_event_insert_is_completed_by_the_next_read(svc, fake) -> None:
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    fake.faults.fail_statement_matching = r"^MERGE INTO events"
    with pytest.raises(DatabricksSqlError, match="injected failure"):
        await svc.append_event(s, ev({"k": 1}, "e1"))
    assert fake.faults.fail_statement_matching is None
    got = await DeltaSessionService(svc.engine).get_session(app_name=APP, user_id="u", session_id="s")
    assert [e.content.parts[0].text for e in got.events] == ["e1"] and got.state == {"k": 1}


async def test_delta_tables_of_the_previous_schema_gain_the_columns(engine, fake) -> None:
    from tests.sessions.test_state_values_and_storage_files import OLD_SCHEMA

    for statement in filter(str.strip, OLD_SCHEMA.split(";")):  # the tables as the previous schema made them
        engine.execute(statement.replace("VARCHAR", "STRING"))
    svc = DeltaSessionService(engine)
    altered = [s.sql for s in fake.sql.statements.values() if s.sql.startswith("ALTER TABLE")]
    assert sorted(altered) == sorted([
        "ALTER TABLE sessions ADD COLUMN pending_json STRING",
        "ALTER TABLE sessions ADD COLUMN state_version BIGINT", "ALTER TABLE sessions ADD COLUMN tail_bytes BIGINT",
        "ALTER TABLE sessions ADD COLUMN fence BIGINT",
        "ALTER TABLE app_states ADD COLUMN version BIGINT", "ALTER TABLE app_states ADD COLUMN applied_json STRING",
        "ALTER TABLE user_states ADD COLUMN version BIGINT", "ALTER TABLE user_states ADD COLUMN applied_json STRING"])
    s = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert s.state == {"k": 1, "user:lang": "fr"}
    await svc.append_event(s, ev({"user:lang": "de", "k": 2}))
    assert await svc.get_user_state(app_name=APP, user_id="u") == {"lang": "de"}
    # The old row's state_json is the snapshot as of its version; the append's delta folds in on read.
    again = await DeltaSessionService(engine).get_session(app_name=APP, user_id="u", session_id="s")
    assert again.state == {"k": 2, "user:lang": "de"}


class _ReaderFirst:
    """An engine whose first event INSERT lets another process read the session first: the reader finds the
    append committed (the session row) and incomplete (no event row), and completes it — then the writer's own
    insert runs. Found by the concurrent runners (docs/session-store.md#concurrent-runners: an event stored twice)."""

    def __init__(self, engine, read) -> None:
        self._engine, self._read, self.done = engine, read, False

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def execute(self, sql, params=None):
        if sql.lstrip().upper().startswith(("INSERT INTO EVENTS", "MERGE INTO EVENTS")) and not self.done:
            self.done = True
            import threading

            reader = threading.Thread(target=self._read)
            reader.start()
            reader.join()
        return self._engine.execute(sql, params)


async def test_an_append_completed_by_a_reader_in_between_is_stored_once(engine) -> None:
    import asyncio

    reader = DeltaSessionService(engine)  # another process
    seen = []
    read = lambda: seen.append(asyncio.run(reader.get_session(app_name=APP, user_id="u", session_id="s")))  # noqa: E731
    writer = DeltaSessionService(_ReaderFirst(engine, read), retry=ConflictRetry(sleep=lambda s: None))
    s = await writer.create_session(app_name=APP, user_id="u", session_id="s")
    await writer.append_event(s, ev({"k": 1}, "e1"))
    assert writer.engine.done and [e.content.parts[0].text for e in seen[0].events] == ["e1"]  # rolled forward
    got = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    assert [e.content.parts[0].text for e in got.events] == ["e1"], "the event was stored twice"
    rows = await reader.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert [e.seq for e in rows.events] == [1] and rows.version == 1
