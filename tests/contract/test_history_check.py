"""The Elle-style history check on hand-made histories: a clean one passes, each anomaly fails with its witness."""

from __future__ import annotations

from dataclasses import replace

from harness.contract.history import HistoryWriter, Op, read_history
from harness.contract.history_check import check_history

APP, USER = "app", "u"


def _append(process, seq, start, end, delta, *, ok=True, session="s", error="", user=USER):
    return Op(process=process, seq=seq, kind="append", app=APP, user=user, session=session, start=start, end=end,
              ok=ok, error=error, delta=delta, event=f"{process}-{seq}")


def _read(process, seq, start, end, state, events=(), *, session="s", user=USER):
    return Op(process=process, seq=seq, kind="read", app=APP, user=user, session=session, start=start, end=end,
              state=state, events=tuple(events))


def _final(state, events, *, session="s", user=USER):
    return Op(process="final", seq=0, kind="read", app=APP, user=user, session=session, start=1000, end=1001,
              state=state, events=tuple(events))


def _double_submit(*, b_ok: bool, b_error: str = ""):
    """p0 and p1 both load the empty session, p0 appends first, p1 appends over the stale session."""
    return [
        _read("p0", 0, 1, 2, {}), _read("p1", 0, 1, 3, {}),
        _append("p0", 1, 4, 5, {"trail": ["p0-1"], "user:trail": ["p0-1"], "last": "p0-1"}),
        _append("p1", 1, 6, 7, {"trail": ["p1-1"], "user:trail": ["p1-1"], "last": "p1-1"}, ok=b_ok, error=b_error),
    ]


def test_a_stale_writer_refused_and_nothing_lost_passes():
    ops = _double_submit(b_ok=False, b_error="StaleSessionError: modified in storage")
    final = _final({"trail": ["p0-1"], "user:trail": ["p0-1"], "last": "p0-1"}, ["p0-1"])
    verdict = check_history(ops, [final])
    assert verdict.ok, verdict.describe()
    assert (verdict.appends, verdict.acknowledged, verdict.refused) == (2, 1, 1)


def test_overlapping_writes_may_land_in_either_order():
    ops = [_append("p0", 0, 1, 10, {"last": "a"}), _append("p1", 0, 2, 9, {"last": "b"})]
    for last in ("a", "b"):
        assert check_history(ops, [_final({"last": last}, ["p0-0", "p1-0"])]).ok


def test_a_stale_writer_accepted_is_a_lost_update_with_its_witness():
    ops = _double_submit(b_ok=True)
    final = _final({"trail": ["p1-1"], "user:trail": ["p1-1"], "last": "p1-1"}, ["p0-1", "p1-1"])
    verdict = check_history(ops, [final])
    lost = [a for a in verdict.anomalies if a.name == "lost_update"]
    assert {a.key for a in lost} == {"trail", "user:trail"}, verdict.describe()
    witness = [op.ref for op in lost[0].witness]
    # the lost append, the read the overwriter built on, the overwriter, the final read: nothing else
    assert witness == ["p0#1 append", "p1#0 read", "p1#1 append", "final#0 read"]
    assert "p0-1" in lost[0].message and "minimal witness" in lost[0].describe()
    assert verdict.names() == {"lost_update"}  # the register 'last' was written last by p1: not lost


def test_a_value_replaced_by_an_earlier_write_is_a_lost_write():
    ops = [_append("p0", 0, 1, 2, {"user:k": 1}, session="s1"), _append("p1", 0, 3, 4, {"user:k": 2}, session="s2")]
    for session, event in (("s1", "p0-0"), ("s2", "p1-0")):  # a user: key is one for every session of the user
        verdict = check_history(ops, [_final({"user:k": 1}, [event], session=session)])
        assert verdict.names() == {"lost_write"}, verdict.describe()
        (anomaly,) = verdict.anomalies
        assert [op.ref for op in anomaly.witness] == ["p0#0 append", "p1#0 append", "final#0 read"]


def test_an_absent_key_is_a_lost_write():
    ops = [_append("p0", 0, 1, 2, {"app:k": "v"})]
    verdict = check_history(ops, [_final({}, ["p0-0"])])
    assert verdict.names() == {"lost_write"} and verdict.anomalies[0].key == "app:k"
    assert "does not hold" in verdict.anomalies[0].message


def test_user_keys_of_another_user_do_not_count():
    ops = [_append("p0", 0, 1, 2, {"user:k": "v"}, user="other")]
    assert check_history(ops, [_final({}, [])]).ok


def test_a_refused_append_that_was_stored_is_named():
    ops = _double_submit(b_ok=False, b_error="StaleSessionError: x")
    final = _final({"trail": ["p0-1"], "user:trail": ["p0-1"], "last": "p1-1"}, ["p0-1", "p1-1"])
    verdict = check_history(ops, [final])
    assert verdict.names() == {"refused_write_stored"}, verdict.describe()
    keys = {a.key for a in verdict.anomalies}
    assert keys == {"last", "p1-1"}  # its value and its event
    assert all(a.witness[0].ref == "p1#1 append" for a in verdict.anomalies)


def test_a_refused_list_element_that_was_stored_is_named():
    ops = [_append("p0", 0, 1, 2, {"trail": ["p0-0"]}), _append("p1", 0, 3, 4, {"trail": ["p0-0", "p1-0"]},
                                                                    ok=False, error="StaleSessionError: x")]
    verdict = check_history(ops, [_final({"trail": ["p1-0", "p0-0"]}, ["p0-0"])])
    assert "refused_write_stored" in verdict.names(), verdict.describe()


def test_lost_and_duplicated_events():
    ops = [_append("p0", 0, 1, 2, {"k": 1}), _append("p0", 1, 3, 4, {"k": 2})]
    verdict = check_history(ops, [_final({"k": 2}, ["p0-1", "p0-1"])])
    assert verdict.names() == {"lost_event", "duplicate_event"}, verdict.describe()
    assert {a.key: [op.ref for op in a.witness] for a in verdict.anomalies} == {
        "p0-0": ["p0#0 append", "final#0 read"], "p0-1": ["p0#1 append", "final#0 read"]}


def test_two_appends_each_blind_to_the_other_are_a_stale_append_where_views_were_recorded():
    """No key lost, no event lost: p1's append was taken on a view without p0's event, which is stored first."""
    p0 = replace(_append("p0", 1, 4, 5, {}), seen=())
    p1 = replace(_append("p1", 1, 6, 7, {}), seen=())
    verdict = check_history([p0, p1], [_final({}, ["p0-1", "p1-1"])])
    assert verdict.names() == {"stale_append"}, verdict.describe()
    [stale] = verdict.anomalies
    assert [op.ref for op in stale.witness] == ["p0#1 append", "p1#1 append", "final#0 read"]
    assert "on a view of no events" in stale.describe() and "neither seeing the other's" in stale.message
    # p1 saw p0's event (it built on it), or the store refused p1, or no view was recorded: nothing to name.
    assert check_history([p0, replace(p1, seen=("p0-1",))], [_final({}, ["p0-1", "p1-1"])]).ok
    assert check_history([p0, replace(p1, ok=False, error="StaleSessionError: x")], [_final({}, ["p0-1"])]).ok
    assert check_history([p0, replace(p1, seen=None)], [_final({}, ["p0-1", "p1-1"])]).ok


def test_a_failed_read_is_named():
    failed = Op(process="p0", seq=0, kind="read", app=APP, user=USER, session="s", ok=False, error="OSError: x")
    verdict = check_history([failed], [_final({}, [])])
    assert verdict.names() == {"read_failed"} and verdict.anomalies[0].witness == (failed,)
    unreadable = Op(process="final", seq=0, kind="read", app=APP, user=USER, session="s", state=None)
    assert check_history([], [unreadable]).names() == {"read_failed"}


def test_an_indeterminate_write_may_or_may_not_be_stored():
    ops = [_append("p0", 0, 1, 2, {"k": "a"}), _append("p1", 0, 3, 4, {"k": "b"}, ok=None)]
    assert check_history(ops, [_final({"k": "b"}, ["p0-0", "p1-0"])]).ok
    assert check_history(ops, [_final({"k": "a"}, ["p0-0"])]).ok


def test_histories_round_trip_through_jsonl(tmp_path):
    path = tmp_path / "p0.jsonl"
    writer = HistoryWriter("p0", path)
    writer.record("append", app=APP, user=USER, session="s", start=1, end=2, delta={"user:k": ["ü"]}, event="p0-0")
    writer.record("read", app=APP, user=USER, session="s", start=3, end=4, state={"user:k": ["ü"]}, events=("p0-0",))
    writer.close()
    with path.open("a", encoding="utf-8") as cut:
        cut.write('{"process": "p0", "seq": 2, "ki')  # a crash mid-line
    assert list(read_history(path)) == writer.ops
