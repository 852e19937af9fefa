"""``create_session`` on an engine without transactions (Databricks; issue 34 item 5): a client that dies after
any statement of a create leaves either no session (a retry creates it) or a whole one — its initial ``user:`` and
``app:`` state included, as ``get_session`` reads it and as a retry (``AlreadyExistsError``) leaves it.

Before the fix, a failure after the session row left the session without its initial scope state for good: every
read showed it without ``user:lang``, and a retry got ``AlreadyExistsError``."""

from __future__ import annotations

import pytest
from google.adk.errors.already_exists_error import AlreadyExistsError

from reference_agent.backends.databricks.errors import DatabricksSqlError
from reference_agent.sessions import DeltaSessionService
from reference_agent.sessions.conflicts import ConflictRetry

APP = "app"
STATE = {"k": 1, "user:lang": "fr", "user:tier": "gold", "app:mode": "strict"}
WHOLE = dict(STATE)


def service(engine) -> DeltaSessionService:
    return DeltaSessionService(engine, retry=ConflictRetry(sleep=lambda s: None))


async def _create(svc: DeltaSessionService, fake, fail_after: int | None) -> bool:
    """Whether the create raised (the injected failure) with every statement after ``fail_after`` failing."""
    fake.faults.fail_statements_after = fail_after
    try:
        await svc.create_session(app_name=APP, user_id="u", session_id="s", state=dict(STATE))
    except DatabricksSqlError as exc:
        assert "injected failure" in str(exc)
        return True
    finally:
        fake.faults.fail_statements_after = None
    return False


@pytest.mark.parametrize("k", range(7))
async def test_a_client_that_dies_after_any_statement_of_a_create_leaves_no_half_session(engine, fake, k) -> None:
    writer = service(engine)
    failed = await _create(writer, fake, k)
    reader = service(engine)  # another process
    got = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    if got is None:  # it died before the session row: nothing is there, and a retry creates it whole
        assert failed
        got = await reader.create_session(app_name=APP, user_id="u", session_id="s", state=dict(STATE))
    assert got.state == WHOLE, (k, failed)
    assert await reader.get_user_state(app_name=APP, user_id="u") == {"lang": "fr", "tier": "gold"}
    listed = (await reader.list_sessions(app_name=APP, user_id="u")).sessions
    assert [s.state for s in listed] == [WHOLE]
    with pytest.raises(AlreadyExistsError):
        await reader.create_session(app_name=APP, user_id="u", session_id="s", state=dict(STATE))


@pytest.mark.parametrize("k", range(1, 7))
async def test_a_retried_create_finds_the_session_whole(engine, fake, k) -> None:
    """A caller that retries its failed create gets AlreadyExistsError once the session row is there, and the
    session it names is whole: the retry completed it, before any get_session (list_sessions and get_user_state
    read it whole too)."""
    writer = service(engine)
    if not await _create(writer, fake, k):
        pytest.skip(f"the create makes fewer than {k + 1} statements")
    retry = service(engine)
    try:
        await retry.create_session(app_name=APP, user_id="u", session_id="s", state=dict(STATE))
    except AlreadyExistsError:
        pass
    assert await retry.get_user_state(app_name=APP, user_id="u") == {"lang": "fr", "tier": "gold"}
    listed = (await retry.list_sessions(app_name=APP)).sessions
    assert [s.state for s in listed] == [WHOLE]


async def test_a_whole_create_writes_no_redo_record_left_behind(engine, fake) -> None:
    svc = service(engine)
    await svc.create_session(app_name=APP, user_id="u", session_id="s", state=dict(STATE))
    assert engine.execute("SELECT pending_json FROM sessions") == [(None,)]
    s = await svc.get_session(app_name=APP, user_id="u", session_id="s")
    assert s.state == WHOLE
