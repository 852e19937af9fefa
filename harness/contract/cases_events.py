"""Contract cases: event order, ``GetSessionConfig``, partial events, large values, unicode."""

from __future__ import annotations

from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
)

from .case import Clock, contract_case, event, expect_state, reload, short, texts
from .profiles import ServiceProfile

APP = "contract-events"


@contract_case
async def event_order(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Events come back in append order, with their authors, content and deltas."""
    clock = Clock()
    session = await service.create_session(app_name=APP, user_id="u")
    authors = ["user", "analyst", "tool", "analyst"]
    for i in range(25):
        await service.append_event(session, event(clock, {"n": i}, author=authors[i % 4], text=f"e{i}"))
    got = await reload(service, session)
    assert texts(got) == [f"e{i}" for i in range(25)], f"events out of append order: {texts(got)}"
    assert [e.author for e in got.events] == [authors[i % 4] for i in range(25)], "event authors changed on reload"
    assert [e.actions.state_delta for e in got.events] == [{"n": i} for i in range(25)], "event state_deltas changed"
    expect_state(got.state, {"n": 24}, "state after 25 appends")


@contract_case
async def get_session_config(service: BaseSessionService, profile: ServiceProfile) -> None:
    """num_recent_events keeps the last N (0 = none); after_timestamp keeps events at or after it."""
    clock = Clock()
    session = await service.create_session(app_name=APP, user_id="u")
    stamps = []
    for i in range(10):
        appended = await service.append_event(session, event(clock, {"n": i}, text=f"e{i}"))
        stamps.append(appended.timestamp)
    cases = [
        ("num_recent_events=3", GetSessionConfig(num_recent_events=3), ["e7", "e8", "e9"]),
        ("num_recent_events=0", GetSessionConfig(num_recent_events=0), []),
        ("num_recent_events=50", GetSessionConfig(num_recent_events=50), [f"e{i}" for i in range(10)]),
        ("after_timestamp=<e6>", GetSessionConfig(after_timestamp=stamps[6]), ["e6", "e7", "e8", "e9"]),
        ("after_timestamp=<e2>, num_recent_events=3",
         GetSessionConfig(after_timestamp=stamps[2], num_recent_events=3), ["e7", "e8", "e9"]),
    ]
    for label, config, expected in cases:
        got = await reload(service, session, config)
        assert texts(got) == expected, f"get_session({label}) returned events {texts(got)}, expected {expected}"
        expect_state(got.state, {"n": 9}, f"get_session({label}) state (filters apply to events only)")


@contract_case
async def partial_not_persisted(service: BaseSessionService, profile: ServiceProfile) -> None:
    """A partial (streaming) event is neither stored nor applied to state."""
    clock = Clock()
    session = await service.create_session(app_name=APP, user_id="u")
    await service.append_event(session, event(clock, {"partial_key": 1}, text="chunk", partial=True))
    await service.append_event(session, event(clock, {"final_key": 1}, text="final"))
    got = await reload(service, session)
    assert texts(got) == ["final"], f"a partial event was persisted: events {texts(got)}"
    for where, state in (("the live session", session.state), ("the reloaded session", got.state)):
        assert "partial_key" not in state, f"{where}: a partial event's delta was applied ('partial_key')"


@contract_case
async def large_values(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Megabyte strings and deep/wide structures survive a round-trip unchanged."""
    clock = Clock()
    big = "x" * 1_000_000 + "end"
    wide = [{"i": i, "s": f"row {i}", "f": i / 7} for i in range(5_000)]
    deep: dict = {"leaf": True}
    for level in range(40):
        deep = {f"level{level}": deep}
    session = await service.create_session(app_name=APP, user_id="u", state={"big_at_create": big})
    await service.append_event(session, event(clock, {"big": big, "wide": wide, "deep": deep, "user:big": big}))
    got = await reload(service, session)
    for key, value in (("big_at_create", big), ("big", big), ("wide", wide), ("deep", deep), ("user:big", big)):
        assert got.state.get(key) == value, f"large value {key!r} changed on reload: got {short(got.state.get(key))}"
    assert got.events[-1].actions.state_delta.get("big") == big, "the event's large 'big' value changed on reload"


UNICODE = {
    "ключ": "значение",
    "键🔑": "值 ✓ 🚀",
    "clé avec espaces": "e\u0301 (not normalised) \u00e9",
    'quote"and\\backslash': "line\nbreak\ttab 'single' \"double\"",
    "مفتاح": "مرحبا بالعالم",
    "zwj👩‍💻": "\u200d\u2028\ufeff𝔘𝔫𝔦",
}


@contract_case
async def unicode_keys_and_values(service: BaseSessionService, profile: ServiceProfile) -> None:
    """Non-ASCII keys and values (all scopes) come back byte-for-byte, without normalisation."""
    clock = Clock()
    initial = {"app:アプリ": "アプリ値", "user:ユーザー": "ユーザー値", "初期": "値"}
    session = await service.create_session(app_name=APP, user_id="ユーザー", state=initial)
    await service.append_event(session, event(clock, UNICODE, text="ünïcødé ✓"))
    got = await reload(service, session)
    expect_state(got.state, {**initial, **UNICODE}, "unicode state after reload")
    assert texts(got) == ["ünïcødé ✓"], f"unicode event text changed: {texts(got)}"
    expect_state(dict(got.events[0].actions.state_delta or {}), UNICODE, "unicode event state_delta after reload")
    if profile.supports_get_user_state:
        expect_state(await service.get_user_state(app_name=APP, user_id="ユーザー"), {"ユーザー": "ユーザー値"},
                     "get_user_state with unicode user id and key")
