"""Contract cases: lifecycle, errors, scoping, ``temp:`` and ``None``."""

from __future__ import annotations

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

from .case import Clock, contract_case, event, expect_absent, expect_state, reload
from .profiles import ServiceProfile

APP = "contract-app"


async def _ids(service: BaseSessionService, app: str, user: str | None = None) -> set[tuple[str, str]]:
    return {(s.user_id, s.id) for s in (await service.list_sessions(app_name=app, user_id=user)).sessions}


@contract_case
async def create_get_list_delete(service: BaseSessionService, profile: ServiceProfile) -> None:
    """create / get / list / delete round-trip, for a given and a generated session id."""
    clock = Clock()
    s1 = await service.create_session(app_name=APP, user_id="u1", state={"k": 1}, session_id="s1")
    assert (s1.app_name, s1.user_id, s1.id) == (APP, "u1", "s1"), f"create_session returned {s1.app_name, s1.user_id, s1.id}"
    expect_state(s1.state, {"k": 1}, "create_session's returned state")
    generated = await service.create_session(app_name=APP, user_id="u1")
    assert generated.id and generated.id != "s1", f"a generated session id must be new and non-empty, got {generated.id!r}"
    await service.create_session(app_name=APP, user_id="u2", session_id="s1")  # same id, another user
    await service.append_event(s1, event(clock, {"k": 2}, text="hello"))
    got = await reload(service, s1)
    expect_state(got.state, {"k": 2}, "get_session after one append")
    assert len(got.events) == 1, f"get_session after one append: expected 1 event, got {len(got.events)}"

    assert await _ids(service, APP, "u1") == {("u1", "s1"), ("u1", generated.id)}, \
        f"list_sessions(user_id='u1') returned {await _ids(service, APP, 'u1')}"
    assert ("u2", "s1") in await _ids(service, APP), "list_sessions(user_id=None) must list every user's sessions"
    await service.delete_session(app_name=APP, user_id="u1", session_id="s1")
    assert await service.get_session(app_name=APP, user_id="u1", session_id="s1") is None, \
        "get_session after delete_session must return None"
    assert await _ids(service, APP, "u1") == {("u1", generated.id)}, "delete_session must remove only that session"
    assert await service.get_session(app_name=APP, user_id="u2", session_id="s1") is not None, \
        "delete_session('u1', 's1') deleted user u2's session 's1'"
    await service.delete_session(app_name=APP, user_id="u1", session_id="never-created")  # a no-op, not an error
    # Deleted means gone: a new session under the deleted id starts empty, with none of the old events or state.
    again = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    reborn = await reload(service, again)
    assert not reborn.events and "k" not in reborn.state, (
        f"a session re-created under a deleted id holds the deleted one's data: {len(reborn.events)} event(s), "
        f"state keys {sorted(reborn.state)}; delete_session must delete the session's events and state")


@contract_case
async def already_exists_and_not_found(service: BaseSessionService, profile: ServiceProfile) -> None:
    """A duplicate id raises AlreadyExistsError; a missing session is None on get and SessionNotFoundError on append."""
    clock = Clock()
    await service.create_session(app_name=APP, user_id="u", session_id="dup")
    try:
        await service.create_session(app_name=APP, user_id="u", session_id="dup")
    except AlreadyExistsError:
        pass
    else:
        raise AssertionError("create_session with an existing session id 'dup' must raise AlreadyExistsError")
    assert await service.get_session(app_name=APP, user_id="u", session_id="missing") is None, \
        "get_session of a missing session must return None"
    deleted = await service.create_session(app_name=APP, user_id="u")
    await service.delete_session(app_name=APP, user_id="u", session_id=deleted.id)
    for label, session in (("a never-created session", Session(app_name=APP, user_id="u", id="missing")),
                           ("a deleted session", deleted)):
        try:
            await service.append_event(session, event(clock, {"k": 1}))
        except SessionNotFoundError:
            continue
        except Exception as error:  # e.g. ADK 1.x's bare ValueError: a contract failure, not a crash of the case
            raise AssertionError(f"append_event to {label} must raise SessionNotFoundError, raised "
                                 f"{type(error).__name__}: {error}") from error
        raise AssertionError(f"append_event to {label} must raise SessionNotFoundError")


@contract_case
async def state_scoping(service: BaseSessionService, profile: ServiceProfile) -> None:
    """app: is shared by the app, user: by one user's sessions, other keys stay in their session."""
    clock = Clock()
    s1 = await service.create_session(app_name=APP, user_id="u1",
                                      state={"own": "s1", "app:shared": 1, "user:pref": "u1"})
    s2 = await service.create_session(app_name=APP, user_id="u1")
    s3 = await service.create_session(app_name=APP, user_id="u2")
    other_app = await service.create_session(app_name=APP + "-other", user_id="u1")
    await service.append_event(s1, event(clock, {"own": "s1b", "app:shared": 2, "user:pref": "u1b"}))
    expect_state((await reload(service, s2)).state, {"app:shared": 2, "user:pref": "u1b"}, "another session of user u1")
    expect_absent((await reload(service, s2)).state, ["own"], "another session of user u1 (session-scoped key)")
    expect_state((await reload(service, s3)).state, {"app:shared": 2}, "a session of user u2")
    expect_absent((await reload(service, s3)).state, ["user:pref", "own"], "a session of user u2")
    expect_absent((await reload(service, other_app)).state, ["app:shared", "user:pref", "own"], "a session of another app")
    expect_state((await reload(service, s1)).state, {"own": "s1b", "app:shared": 2, "user:pref": "u1b"}, "the writer's session")
    if profile.supports_get_user_state:
        assert await service.get_user_state(app_name=APP, user_id="u1") == {"pref": "u1b"}, \
            f"get_user_state(u1) must return un-prefixed user keys, got {await service.get_user_state(app_name=APP, user_id='u1')}"
        assert await service.get_user_state(app_name=APP, user_id="u2") == {}, "get_user_state(u2) must be empty"


@contract_case
async def temp_not_persisted(service: BaseSessionService, profile: ServiceProfile) -> None:
    """temp: keys are visible in the live session after append but never persisted (state or events)."""
    clock = Clock()
    session = await service.create_session(app_name=APP, user_id="u", state={"k": 1, "temp:at_create": 1})
    appended = await service.append_event(session, event(clock, {"k": 2, "temp:scratch": "x", "user:kept": 1}))
    expect_state(session.state, {"temp:scratch": "x", "k": 2}, "the live session after append_event")
    got = await reload(service, session)
    expect_absent(got.state, ["temp:scratch", "temp:at_create"], "temp: persisted: the reloaded session state")
    for index, stored in enumerate(got.events):
        expect_absent(dict(stored.actions.state_delta or {}), ["temp:scratch"],
                      f"temp: persisted: reloaded event #{index}'s state_delta")
    for listed in (await service.list_sessions(app_name=APP, user_id="u")).sessions:
        expect_absent(listed.state, ["temp:scratch", "temp:at_create"], "temp: persisted: list_sessions' state")
    expect_absent(dict(appended.actions.state_delta or {}), ["temp:scratch"],
                  "the event append_event returned (its state_delta must be trimmed of temp:)")


@contract_case
async def none_semantics(service: BaseSessionService, profile: ServiceProfile) -> None:
    """None in a delta deletes the key or stores None, as the profile declares, in every scope."""
    clock = Clock()
    keys = ["cleared_key", "app:cleared_key", "user:cleared_key"]
    session = await service.create_session(app_name=APP, user_id="u", state={"kept_key": 1, **{k: 1 for k in keys}})
    await service.append_event(session, event(clock, {k: None for k in keys}))
    got = await reload(service, session)
    expect_state(got.state, {"kept_key": 1}, "the reloaded session")
    delta = dict(got.events[-1].actions.state_delta or {}) if got.events else {}
    expect_state(delta, {k: None for k in keys}, "the reloaded event's state_delta (None must round-trip)")
    declared = f"(profile {profile.name!r} declares none_semantics={profile.none_semantics!r})"
    for where, state in (("the reloaded session", got.state), ("the live session", session.state)):
        if profile.none_semantics == "delete":
            expect_absent(state, keys, f"None must delete the key {declared}; {where}")
        else:
            expect_state(state, {k: None for k in keys}, f"None must be stored {declared}; {where}")
