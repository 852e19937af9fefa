"""Session stores written by the services themselves, with the reference agent's own keys and roles.

One session is one RLM iteration as the reference agent persists it (reference_agent/conformance_profile.yaml):
the user asks; the analyst delegates code (``rlm:iteration``, ``rlm:last_artifact_id``); the job builder
executes it (``rlm:last_result_json_path``, ``rlm:last_execution_success`` and ``temp:`` glue that must not
persist); the results processor summarises (``rlm:last_results_summary``); the conversation runner records
the answer (``rlm:final_answer``, ``user:rlm:history``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

APP = "rlm_app"
BASE = 1_767_225_600.0  # 2026-01-01T00:00:00Z
_clock = itertools.count(1)


def _event(author: str, *, invocation: str, delta: dict[str, Any] | None = None, text: str | None = None,
           call: str | None = None, response: str | None = None, at: float) -> Event:
    parts = []
    if text:
        parts.append(types.Part(text=text))
    if call:
        parts.append(types.Part(function_call=types.FunctionCall(name=call, args={"code": "print(1)"})))
    if response:
        parts.append(types.Part(function_response=types.FunctionResponse(name=response, response={"ok": True})))
    content = types.Content(role="user" if author == "user" else "model", parts=parts) if parts else None
    return Event(invocation_id=invocation, author=author, content=content,
                 actions=EventActions(state_delta=dict(delta or {})), timestamp=at)


def iteration_events(index: int, start: float) -> list[Event]:
    inv = f"inv-{index}"
    steps = [
        ("user", {}, {"text": "How many rows has the orders table?"}),
        ("databricks_analyst", {}, {"call": "delegate_code_results"}),
        ("databricks_analyst", {"rlm:iteration": 1, "rlm:last_artifact_id": f"art-{index}",
                                "temp:rlm:stage": "delegated", "temp:rlm:code": "print(1)"},
         {"response": "delegate_code_results"}),
        ("job_builder", {"rlm:last_result_json_path": f"/Volumes/main/rlm/vol/result_{index}.json",
                         "rlm:last_execution_success": True, "temp:rlm:execution_stdout": "3"},
         {"text": "Executed artifact."}),
        ("results_processor", {"rlm:last_results_summary": "The orders table has 3 rows."},
         {"text": "The orders table has 3 rows."}),
        ("run_conversation", {"rlm:final_answer": "3", "user:rlm:history": [{"q": "rows?", "a": "3"}]},
         {"text": "3"}),
    ]
    return [_event(author, invocation=inv, delta=delta, at=start + i, **kw)
            for i, (author, delta, kw) in enumerate(steps)]


async def write_sessions(service: Any, count: int, *, users: int = 2, app: str = APP) -> list[tuple[str, str, str]]:
    """``count`` sessions of one iteration each, across ``users`` users; returns their (app, user, id) keys."""
    keys = []
    for n in range(count):
        user, session_id = f"user-{n % users}", f"s-{n:05d}"
        session = await service.create_session(app_name=app, user_id=user, session_id=session_id)
        for event in iteration_events(n, BASE + 100 * n):
            await service.append_event(session, event)
        keys.append((app, user, session_id))
    return keys


async def adk_sqlite_store(path: Path, count: int = 3) -> str:
    """ADK's own DatabaseSessionService on SQLite (aiosqlite); returns the STORE URL to audit."""
    from google.adk.sessions.database_session_service import DatabaseSessionService

    service = DatabaseSessionService(f"sqlite+aiosqlite:///{path}")
    try:
        await write_sessions(service, count)
    finally:
        close = getattr(service, "close", None)
        if close is not None:
            await close()
        else:
            await service.db_engine.dispose()
    return f"sqlite:///{path}"


async def rlm_duckdb_store(path: Path, count: int = 3) -> str:
    """This project's DeltaSessionService on a DuckDB file; returns the file path (a STORE spelling)."""
    from reference_agent.sessions import DeltaSessionService

    service = DeltaSessionService.duckdb(path)
    try:
        await write_sessions(service, count)
    finally:
        service.close()
    return str(path)


async def rlm_scope_rows_store(path: Path, count: int = 3) -> str:
    """This project's service as its previous version left a DuckDB file: ``app:``/``user:`` state as one JSON
    object per app (``app_states``) and per user (``user_states``), no per-key tables. Written by today's service,
    then rewritten in the old layout (as the previous version's schema.py made it)."""
    import duckdb

    await rlm_duckdb_store(path, count)
    with duckdb.connect(str(path)) as db:
        for table, keyed, owner in (("app_states", "app_state_keys", ("app_name",)),
                                    ("user_states", "user_state_keys", ("app_name", "user_id"))):
            scopes: dict[tuple, dict[str, Any]] = {}
            times: dict[tuple, tuple[float, int]] = {}
            for *who, key, value, version, update_time in db.execute(
                    f"SELECT {', '.join(owner)}, state_key, value_json, version, update_time FROM {keyed}"
                    f" ORDER BY {', '.join(owner)}, state_key").fetchall():
                state = scopes.setdefault(tuple(who), {})
                if value is not None:
                    state[key] = json.loads(value)
                last = times.get(tuple(who), (0.0, 0))
                times[tuple(who)] = (max(last[0], update_time), max(last[1], version))
            for who, state in scopes.items():
                db.execute(f"INSERT INTO {table} ({', '.join(owner)}, state_json, update_time, version, applied_json)"
                           f" VALUES ({', '.join('?' for _ in owner)}, ?, ?, ?, '[]')",
                           (*who, json.dumps(state), *times[who]))
            db.execute(f"DROP TABLE {keyed}")
    return str(path)
