"""DatabricksSqlEngine against the fake's Statement Execution API (DuckDB behind it), through the real SDK client."""

from __future__ import annotations

import pytest

from reference_agent.backends.databricks.errors import DatabricksSqlError
from reference_agent.storage.databricks_engine import DatabricksSqlEngine
from reference_agent.storage.dialect import DATABRICKS
from reference_agent.storage.sql import SqlEngine, affected_rows, ensure_tables

COLUMNS = (("name", "STRING"), ("n", "BIGINT"), ("x", "DOUBLE"), ("ok", "BOOLEAN"), ("doc", "JSON"))


def sent_statements(fake) -> list[str]:
    return [s.sql for s in fake.sql.statements.values()]


def test_ddl_insert_select_with_named_typed_params(engine: DatabricksSqlEngine, fake) -> None:
    assert isinstance(engine, SqlEngine) and engine.dialect is DATABRICKS
    ensure_tables(engine, {"things": COLUMNS})
    ensure_tables(engine, {"things": COLUMNS})  # idempotent
    ddl = sent_statements(fake)[0]
    assert ddl.startswith("CREATE TABLE IF NOT EXISTS things") and ddl.endswith("USING DELTA")

    rows = [("a", 1, 0.1, True, '{"k": [1]}'), ("b", 2**62, 1_700_000_000.123456, False, "{}"),
            ("ünï 🚀", -5, -2.5e-300, True, None), ("d", 0, None, None, "null")]
    for name, n, x, ok, doc in rows:
        inserted = engine.execute("INSERT INTO things (name, n, x, ok, doc) VALUES (:name, :n, :x, :ok, :doc)",
                                  {"name": name, "n": n, "x": x, "ok": ok, "doc": doc, "unused": 1})
        assert affected_rows(inserted) == 1
    got = engine.execute("SELECT name, n, x, ok, doc FROM things WHERE n >= :low ORDER BY name", {"low": -10})
    assert got == sorted(rows)  # types restored from the manifest: int, float (exact), bool, None
    assert engine.execute("SELECT count(*) FROM things WHERE name = :n AND ok", {"n": "a"}) == [(1,)]
    # A colon inside a string literal is not a marker; :: casts are left alone.
    assert engine.execute("SELECT ':not_a_param', CAST(:v AS BIGINT) + 1", {"v": 41}) == [(":not_a_param", 42)]

    body = fake.sql.statements[sorted(fake.sql.statements)[2]]
    assert {p["name"]: p.get("type") for p in body.parameters} == {
        "name": "STRING", "n": "BIGINT", "x": "DOUBLE", "ok": "BOOLEAN", "doc": "STRING"}


def test_chunked_results_are_fetched_by_next_chunk_index(engine: DatabricksSqlEngine, fake) -> None:
    engine.execute("CREATE TABLE nums (i BIGINT) USING DELTA")
    for i in range(8):
        engine.execute("INSERT INTO nums VALUES (:i)", {"i": i})
    assert engine.execute("SELECT i FROM nums ORDER BY i") == [(i,) for i in range(8)]
    chunk_gets = [t for m, t in fake.requests if m == "GET" and "/result/chunks/" in t]
    assert [t.rsplit("/", 1)[1] for t in chunk_gets] == ["1", "2"]  # 8 rows, 3 per chunk
    assert engine.execute("SELECT i FROM nums WHERE i > 100") == []


def test_affected_rows_for_dml(engine: DatabricksSqlEngine) -> None:
    engine.execute("CREATE TABLE kv (k STRING, v BIGINT) USING DELTA")
    merge = ("MERGE INTO kv t USING (SELECT :k AS k, :v AS v) s ON t.k = s.k "
             "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)")
    assert affected_rows(engine.execute(merge, {"k": "a", "v": 1})) == 1
    assert affected_rows(engine.execute(merge, {"k": "a", "v": 2})) == 1
    assert affected_rows(engine.execute("INSERT INTO kv VALUES ('b', 1), ('c', 1)")) == 2
    assert affected_rows(engine.execute("UPDATE kv SET v = v + 1 WHERE v = :v", {"v": 1})) == 2
    assert affected_rows(engine.execute("UPDATE kv SET v = 0 WHERE k = :k", {"k": "zz"})) == 0
    assert affected_rows(engine.execute("DELETE FROM kv WHERE k <> :k", {"k": "a"})) == 2
    assert engine.execute("SELECT k, v FROM kv") == [("a", 2)]


def test_transaction_is_a_no_op_and_close_is_harmless(engine: DatabricksSqlEngine) -> None:
    engine.execute("CREATE TABLE t (a BIGINT) USING DELTA")
    with pytest.raises(RuntimeError):
        with engine.transaction():
            engine.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("boom")
    assert engine.execute("SELECT a FROM t") == [(1,)]  # nothing to roll back: documented no-op
    with engine.transaction(), engine.transaction():
        pass
    engine.close()


def test_failed_statement_names_the_sql_error(engine: DatabricksSqlEngine) -> None:
    with pytest.raises(DatabricksSqlError, match=r"failed \(BAD_REQUEST, SQLSTATE 42000\).*no_such_table"):
        engine.execute("SELECT * FROM no_such_table WHERE a = :a", {"a": 1})


def test_parameter_errors_are_caught_before_sending(engine: DatabricksSqlEngine, fake) -> None:
    with pytest.raises(KeyError, match="not supplied"):
        engine.execute("SELECT :missing")
    with pytest.raises(TypeError, match="pass str, int, float, bool or None"):
        engine.execute("SELECT :d", {"d": {"a": 1}})
    assert not fake.sql.statements
