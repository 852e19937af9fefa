"""DuckDBEngine and the dialect layer: parameters, DML counts, transactions, threads."""

from __future__ import annotations

import threading

import pytest

from reference_agent.storage import DATABRICKS, DUCKDB, DuckDBEngine, SqlEngine, affected_rows, ensure_tables

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


@pytest.fixture
def engine():
    eng = DuckDBEngine(None)
    eng.execute("CREATE TABLE t (k STRING, v BIGINT)")
    yield eng
    eng.close()


def test_translate_rewrites_markers_but_not_literals_or_casts():
    sql = "SELECT ':x' AS lit, :a AS a, CAST(:b AS BIGINT), '1'::BIGINT, :a WHERE k = 'it''s :y'"
    text, names = DUCKDB.translate(sql)
    assert text == "SELECT ':x' AS lit, $a AS a, CAST($b AS BIGINT), '1'::BIGINT, $a WHERE k = 'it''s :y'"
    assert names == ("a", "b")
    assert DUCKDB.translate('SELECT 1 AS "a:b", :c AS `x:y`') == ('SELECT 1 AS "a:b", $c AS `x:y`', ("c",))
    assert DATABRICKS.translate(sql)[0] == sql


@pytest.mark.parametrize("sql", [
    "SELECT ':x' AS lit, :a AS a, CAST(:b AS BIGINT), '1'::BIGINT, :a WHERE k = 'it''s :y'",
    'SELECT 1 AS "a:b", :c AS `x:y`',
    "MERGE INTO t USING (SELECT :k AS k) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = :v_2",
])
def test_the_workspace_fake_translates_markers_as_the_agent_does(sql: str):
    """The fake (harness/databricks_fake/sql.py) has its own copy, so the harness imports nothing of the agent."""
    from harness.databricks_fake.sql import duckdb_markers

    assert duckdb_markers(sql) == DUCKDB.translate(sql)


def test_create_table_per_dialect():
    cols = (("id", "STRING"), ("doc", "JSON"), ("n", "BIGINT"))
    assert DUCKDB.create_table("x", cols) == "CREATE TABLE IF NOT EXISTS x (\n  id STRING,\n  doc STRING,\n  n BIGINT\n)"
    assert DATABRICKS.create_table("x", cols).endswith(") USING DELTA")
    with pytest.raises(ValueError, match="unknown column type"):
        DUCKDB.create_table("x", (("id", "SERIAL"),))


def test_engine_satisfies_protocol(engine):
    assert isinstance(engine, SqlEngine)
    assert engine.dialect is DUCKDB


def test_execute_params_and_affected_rows(engine):
    assert affected_rows(engine.execute("INSERT INTO t VALUES (:k, :v)", {"k": "a", "v": 1})) == 1
    # Unused parameters are dropped rather than rejected.
    engine.execute("INSERT INTO t VALUES (:k, :v)", {"k": "b", "v": 2, "unused": 0})
    assert engine.execute("SELECT k, v FROM t WHERE v >= :min ORDER BY k", {"min": 1}) == [("a", 1), ("b", 2)]
    assert affected_rows(engine.execute("UPDATE t SET v = v + 1 WHERE k = :k AND v = :v", {"k": "a", "v": 1})) == 1
    assert affected_rows(engine.execute("UPDATE t SET v = v + 1 WHERE k = :k AND v = :v", {"k": "a", "v": 1})) == 0
    merge = ("MERGE INTO t USING (SELECT :k AS k) s ON t.k = s.k "
             "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, 0)")
    assert affected_rows(engine.execute(merge, {"k": "c"})) == 1
    assert affected_rows(engine.execute(merge, {"k": "c"})) == 0
    assert affected_rows(engine.execute("DELETE FROM t WHERE k = :k", {"k": "zz"})) == 0
    assert affected_rows([]) == 0


def test_missing_parameter_is_named(engine):
    with pytest.raises(KeyError, match="v"):
        engine.execute("INSERT INTO t VALUES (:k, :v)", {"k": "a"})


def test_transaction_commits_and_rolls_back(engine):
    with engine.transaction():
        engine.execute("INSERT INTO t VALUES ('a', 1)")
        with engine.transaction():  # nested joins the outer one
            engine.execute("INSERT INTO t VALUES ('b', 2)")
    with pytest.raises(RuntimeError):
        with engine.transaction():
            engine.execute("INSERT INTO t VALUES ('c', 3)")
            raise RuntimeError("boom")
    assert engine.execute("SELECT k FROM t ORDER BY k") == [("a",), ("b",)]
    # The engine is usable after a rollback.
    with engine.transaction():
        engine.execute("INSERT INTO t VALUES ('d', 4)")
    assert engine.execute("SELECT count(*) FROM t") == [(3,)]


def test_threads_share_one_engine(engine):
    engine.execute("INSERT INTO t VALUES ('n', 0)")

    def bump() -> None:
        for _ in range(25):
            with engine.transaction():
                (v,), = engine.execute("SELECT v FROM t WHERE k = 'n'")
                engine.execute("UPDATE t SET v = :v WHERE k = 'n'", {"v": v + 1})

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # Read-modify-write without lost updates: transactions are serialised.
    assert engine.execute("SELECT v FROM t WHERE k = 'n'") == [(200,)]


def test_file_database_creates_dirs_and_persists(tmp_path):
    path = tmp_path / "a" / "b" / "db.duckdb"
    eng = DuckDBEngine(path)
    ensure_tables(eng, {"kv": (("k", "STRING"), ("doc", "JSON"))})
    ensure_tables(eng, {"kv": (("k", "STRING"), ("doc", "JSON"))})  # idempotent
    eng.execute("INSERT INTO kv VALUES (:k, :d)", {"k": "ключ", "d": '{"v": "✓"}'})
    eng.close()
    with DuckDBEngine(str(path)) as again:
        assert again.execute("SELECT k, doc FROM kv") == [("ключ", '{"v": "✓"}')]


def test_memory_alias():
    with DuckDBEngine(":memory:") as eng:
        assert eng.path is None
        assert eng.execute("SELECT 1") == [(1,)]


HOLD_FILE = """
import sys, time, duckdb
connection = duckdb.connect(sys.argv[1])
print(connection.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_shared_instance_engines_keep_file_semantics(tmp_path):
    """Stores opened on the process's shared DuckDB instance: the same file, locked and released as a file is."""
    import subprocess
    import sys

    from reference_agent.storage import DatabaseLockedError

    path = tmp_path / "store" / "rlm.duckdb"
    first = DuckDBEngine(path, shared_instance=True)
    first.execute("CREATE TABLE t (k STRING, v BIGINT)")
    with first.transaction():
        first.execute("INSERT INTO t VALUES ('a', 1)")
    with pytest.raises(RuntimeError), first.transaction():
        first.execute("INSERT INTO t VALUES ('b', 2)")
        raise RuntimeError("rolled back")
    second = DuckDBEngine(path, shared_instance=True)  # the same file twice in a process: one attachment
    assert second.execute("SELECT k FROM t") == [("a",)]
    first.close()
    first.close()  # a second close is a no-op, and leaves the other engine's attachment alone
    assert second.execute("SELECT count(*) FROM t") == [(1,)]
    other = DuckDBEngine(tmp_path / "other.duckdb", shared_instance=True)  # another file: its own tables
    assert other.execute("SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database()"
                         ) == [(0,)]
    other.close()
    # While attached, the file is locked against other processes, as duckdb.connect locks it.
    held = subprocess.run([sys.executable, "-c", HOLD_FILE, str(path), "0"], capture_output=True, text=True)
    assert held.returncode != 0 and "lock" in held.stderr.lower()
    second.close()  # the last engine on the file: detached (checkpointed), free for another process
    held = subprocess.run([sys.executable, "-c", HOLD_FILE, str(path), "0"], capture_output=True, text=True)
    assert held.returncode == 0 and held.stdout.strip() == "1", held.stderr
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FILE, str(path), "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        with pytest.raises(DatabaseLockedError) as caught:
            DuckDBEngine(path, shared_instance=True)
        assert caught.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    reopened = DuckDBEngine(path, shared_instance=True)  # a refused attach left nothing behind
    assert reopened.execute("SELECT k, v FROM t") == [("a", 1)]
    reopened.close()


@pytest.mark.parametrize("shared_instance", [False, True])
def test_one_thread_and_the_file_still_opens_plainly_in_the_process(tmp_path, shared_instance):
    """Small statements run faster on one DuckDB thread; set after connecting, so a plain connect() of the same
    file in the process (a user's own, or a debugging session) is not refused for a different configuration."""
    import duckdb

    path = tmp_path / "store.duckdb"
    engine = DuckDBEngine(path, shared_instance=shared_instance)
    assert engine.execute("SELECT current_setting('threads')") == [(1,)]
    engine.execute("CREATE TABLE t (k STRING)")
    if shared_instance:  # the shared instance has the file attached: DuckDB says so rather than open it twice
        with pytest.raises(duckdb.Error, match="already attached"):
            duckdb.connect(str(path))
    else:
        with duckdb.connect(str(path)) as plain:
            assert plain.execute("SELECT count(*) FROM t").fetchone() == (0,)
    engine.close()
    assert DuckDBEngine(None).execute("SELECT current_setting('threads')") == [(1,)]
