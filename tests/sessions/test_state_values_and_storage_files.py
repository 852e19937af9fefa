"""Values JSON cannot hold are refused naming the key; old DuckDB files gain the new columns; a locked file says
who holds it and what to do."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.values import MAX_DEPTH, StateValueError, check_storable
from reference_agent.storage import DatabaseLockedError, DuckDBEngine

APP = "app"
ROOT = Path(__file__).resolve().parents[2]


class Thing:
    pass


def cyclic() -> dict:
    loop: dict = {"a": 1}
    loop["again"] = loop
    return loop


def cyclic_list() -> list:
    loop: list = [1]
    loop.append([loop])
    return loop


def nested(levels: int) -> list:
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


@dataclasses.dataclass(frozen=True)
class Deep:
    """``{key: nested(levels)}``, built when the test runs: 100,000 lists made at collection would live as long as
    the session, and every full garbage collection of the xdist worker would walk them (~0.2 s each)."""

    key: str
    levels: int

    def build(self) -> dict:
        return {self.key: nested(self.levels)}


@pytest.mark.parametrize(("delta", "path", "kind"), [
    ({"tags": {"a"}}, "state['tags']", "set"),
    ({"user:prefs": {"tags": {"a", "b"}}}, "state['user:prefs']['tags']", "set"),
    ({"app:raw": b"\xff\xfe"}, "state['app:raw']", "bytes"),
    ({"when": datetime.datetime(2026, 1, 1)}, "state['when']", "datetime"),
    ({"obj": [1, {"deep": Thing()}]}, "state['obj'][1]['deep']", "Thing"),
    ({"pair": (1, 2)}, "state['pair']", "tuple"),
    ({"money": decimal.Decimal("1.5")}, "state['money']", "Decimal"),
    ({"x": math.nan}, "state['x']", "nan"),
    ({"user:x": {"y": -math.inf}}, "state['user:x']['y']", "-inf"),
    ({"m": {1: "one"}}, "state['m'] key 1", "int"),
    # Issue 34 item 4: these escaped with a raw error naming no key (RecursionError, pydantic's "Circular
    # reference detected" / "Maximum serialization depth exceeded", DuckDB's "cannot encode str as UTF-8").
    ({"user:loop": cyclic()}, "state['user:loop']['again']", "contains itself"),
    ({"l": cyclic_list()}, "state['l'][1][0]", "contains itself"),
    (Deep("deep", 100_000), "state['deep']" + "[0]" * 100, "nested deeper than 100"),
    (Deep("deep", 300), "state['deep']" + "[0]" * 100, "nested deeper than 100"),
    ({"app:text": "ok \ud800 no"}, "state['app:text']", "lone surrogate"),
    ({"doc": {"k": ["fine", "x\udfff"]}}, "state['doc']['k'][1]", "lone surrogate"),
    ({"doc": {"bad\ud83d": 1}}, "state['doc'] key 'bad\\ud83d'", "lone surrogate"),
    ({"key\udc80": 1}, "state key 'key\\udc80'", "lone surrogate"),
    ({"huge": 10 ** 5000}, "state['huge']", "digits"),
])
async def test_a_value_json_cannot_hold_is_refused_naming_the_key_and_nothing_changes(delta, path, kind):
    delta = delta.build() if isinstance(delta, Deep) else delta
    svc = DeltaSessionService.duckdb(None)
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s", state={"keep": 1})
    event = Event(invocation_id="i", author="agent", actions=EventActions(state_delta=dict(delta)))
    with pytest.raises(StateValueError) as caught:
        await svc.append_event(s, event)
    message = str(caught.value)
    assert message.startswith(path) and kind in message and "Nothing was written" in message, message
    assert s.state == {"keep": 1} and s.events == []
    stored = await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (stored.state, stored.user_state, stored.app_state, stored.events) == ({"keep": 1}, {}, {}, [])
    with pytest.raises(StateValueError):
        await svc.create_session(app_name=APP, user_id="u", session_id="s2", state=dict(delta))
    assert await svc.get_session(app_name=APP, user_id="u", session_id="s2") is None


async def test_a_non_str_top_level_key_in_create_state_is_refused() -> None:
    svc = DeltaSessionService.duckdb(None)  # (EventActions itself refuses one in a state_delta)
    with pytest.raises(StateValueError, match=r"^state key 2 is an int, not a str"):
        await svc.create_session(app_name=APP, user_id="u", session_id="s", state={2: "v"})
    assert await svc.get_session(app_name=APP, user_id="u", session_id="s") is None


async def test_a_value_the_encoder_still_refuses_is_a_state_value_error_naming_the_key(monkeypatch) -> None:
    """The last line: whatever the checks above let through and the JSON encoder refuses names its key too."""
    from reference_agent.sessions import delta_session_service as module

    svc = DeltaSessionService.duckdb(None)
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    real = module._dumps

    def picky(value):
        if "poison" in str(value):
            raise ValueError("the encoder says no")
        return real(value)

    monkeypatch.setattr(module, "_dumps", picky)
    event = Event(invocation_id="i", author="agent", actions=EventActions(state_delta={"ok": 1, "bad": "poison"}))
    with pytest.raises(StateValueError, match=r"^state\['bad'\] .*the encoder says no.*Nothing was written"):
        await svc.append_event(s, event)
    assert (await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")).events == []


async def test_a_lone_surrogate_in_an_events_content_is_refused_naming_where() -> None:
    from google.genai import types

    svc = DeltaSessionService.duckdb(None)
    s = await svc.create_session(app_name=APP, user_id="u", session_id="s")
    event = Event(invocation_id="i", author="agent", actions=EventActions(state_delta={"k": 1}),
                  content=types.Content(role="model", parts=[types.Part(text="fine"), types.Part(text="x\ud800")]))
    with pytest.raises(StateValueError, match=r"^event\['content'\]\['parts'\]\[1\]\['text'\] .*lone surrogate"):
        await svc.append_event(s, event)
    assert s.state == {} and (await svc.persisted_rows(app_name=APP, user_id="u", session_id="s")).events == []


def test_json_native_values_and_temp_keys_pass() -> None:
    class Level(str):
        pass

    check_storable({"a": None, "b": True, "c": 1, "d": 1.5, "e": "x", "f": [1, [2, {"g": None}]], "h": {"i": {}},
                    "j": Level("x"), "temp:anything": {1, 2}, "temp:obj": Thing(), "temp:loop": cyclic(),
                    "k": nested(99), "unicode": "ключ ✓ 😀", "shared": [shared := {"x": 1}, shared], "big": 10 ** 300})


OLD_SCHEMA = """
CREATE TABLE sessions (app_name VARCHAR, user_id VARCHAR, id VARCHAR, state_json VARCHAR, version BIGINT,
                       create_time DOUBLE, update_time DOUBLE);
CREATE TABLE events (app_name VARCHAR, user_id VARCHAR, session_id VARCHAR, id VARCHAR, seq BIGINT,
                     invocation_id VARCHAR, author VARCHAR, timestamp DOUBLE, state_delta_json VARCHAR,
                     deleted_keys_json VARCHAR, event_json VARCHAR);
CREATE TABLE app_states (app_name VARCHAR, state_json VARCHAR, update_time DOUBLE);
CREATE TABLE user_states (app_name VARCHAR, user_id VARCHAR, state_json VARCHAR, update_time DOUBLE);
INSERT INTO sessions VALUES ('app', 'u', 's', '{"k": 1}', 1, 1.0, 2.0);
INSERT INTO events VALUES ('app', 'u', 's', 'e1', 1, 'inv', 'agent', 2.0, '{"k": 1, "user:lang": "fr"}', '[]',
                           '{"author": "agent", "invocation_id": "inv", "actions": {}}');
INSERT INTO user_states VALUES ('app', 'u', '{"lang": "fr"}', 2.0);
"""


async def test_a_file_made_by_the_previous_schema_gains_the_columns_and_keeps_working(tmp_path):
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(OLD_SCHEMA)
    svc = DeltaSessionService.duckdb(path)
    columns = {t: {c for (c,) in svc.engine.execute(
        f"SELECT column_name FROM information_schema.columns WHERE table_name = '{t}'")}
        for t in ("sessions", "user_states", "app_states")}
    assert {"pending_json", "state_version", "tail_bytes"} <= columns["sessions"]
    assert {"version", "applied_json"} <= columns["user_states"]
    # Its rows have no state_version: their state_json is the whole state (the snapshot as of their version).
    assert svc.engine.execute("SELECT state_version, tail_bytes FROM sessions") == [(None, None)]
    s = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert s.state == {"k": 1, "user:lang": "fr"} and [e.id for e in s.events] == ["e1"]
    await svc.append_event(s, Event(invocation_id="i", author="agent",
                                    actions=EventActions(state_delta={"user:lang": "de", "app:a": 1, "k": 2})))
    # The append wrote its delta only: the old state is the snapshot as of version 1, the new key its tail.
    assert svc.engine.execute("SELECT state_json, state_version, version FROM sessions") == [('{"k": 1}', 1, 2)]
    svc.close()
    again = DeltaSessionService.duckdb(path)  # a second start adds nothing and reads it all
    rows = await again.persisted_rows(app_name=APP, user_id="u", session_id="s")
    assert (rows.version, rows.user_state, rows.app_state, len(rows.events)) == (2, {"lang": "de"}, {"a": 1}, 2)
    assert rows.state == {"k": 2}
    assert (await again.get_session(app_name=APP, user_id="u", session_id="s")).state == {
        "k": 2, "user:lang": "de", "app:a": 1}
    # Its user row (no version: NULL, read as 0) was moved to a row per key on the first open, then bumped.
    assert again.engine.execute("SELECT count(*) FROM user_states") == [(0,)]
    assert again.engine.execute("SELECT state_key, value_json, version FROM user_state_keys") == [("lang", '"de"', 2)]
    again.close()


HOLDER = textwrap.dedent("""
    import sys, time
    from reference_agent.storage import DuckDBEngine
    engine = DuckDBEngine(sys.argv[1])
    print("HOLDING", flush=True)
    time.sleep(60)
""")


@pytest.mark.slow
def test_a_second_process_on_a_locked_file_is_told_who_holds_it_and_what_to_do(tmp_path):
    path = tmp_path / "home" / "rlm.duckdb"
    DuckDBEngine(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HOLDING"
        with pytest.raises(DatabaseLockedError) as caught:
            DuckDBEngine(path)
        message = str(caught.value)
        assert str(path) in message and f"process {holder.pid}" in message
        assert "one process per database file" in message and "--home" in message and "in-memory" in message
        assert caught.value.pid == holder.pid and caught.value.executable
        # The CLI says it without a traceback.
        cli = subprocess.run([sys.executable, "-m", "reference_agent.cli", "demo", "--home", str(path.parent)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and "Traceback" not in cli.stderr and f"process {holder.pid}" in cli.stderr
    finally:
        holder.kill()
        holder.wait()
    DuckDBEngine(path).close()  # free again once the holder is gone


# --- the fast path of check_storable: it may only pass what the full check passes -------------------------------

_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2**4000, max_value=2**4100),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
                    st.sampled_from(["\udc80", "é", (1,), {1}, b"x", 1j]))
_KEYS = st.one_of(st.text(max_size=4), st.sampled_from([1, None, "\udc80", "ü"]))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=12)


def _outcome(delta: dict) -> str:
    try:
        check_storable(delta)
    except StateValueError as exc:
        return str(exc)
    return "stored"


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_the_fast_path_gives_what_the_full_check_gives(value) -> None:
    import reference_agent.sessions.values as values

    fast = _outcome({"k": value})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(values, "_plainly_storable", lambda value: False)
        assert fast == _outcome({"k": value})


def test_the_fast_path_stops_at_a_cycle_and_at_the_depth_limit() -> None:
    looped: list = []
    looped.append(looped)
    deep: list = []
    for _ in range(MAX_DEPTH):
        deep = [deep]
    for value in (looped, deep):
        with pytest.raises(StateValueError):
            check_storable({"k": value})
