"""A store in the seeds' Delta layout (databricks_rlm_agent's DeltaSessionService DDL, on DuckDB), written the
way that service writes: ``version`` 1 at creation and +1 per append, ``sequence_num = version * 1000 + n``,
``event_data_json`` a ``by_alias`` (camelCase) dump, ``state_delta_json`` the delta with its prefixes."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import duckdb

from tests.audit.writers import APP, BASE, iteration_events

DDL = """
CREATE TABLE sessions (app_name VARCHAR NOT NULL, user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL,
  state_json VARCHAR, created_time TIMESTAMP NOT NULL, update_time TIMESTAMP NOT NULL, version BIGINT NOT NULL,
  is_deleted BOOLEAN NOT NULL, deleted_time TIMESTAMP, rewind_to_event_id VARCHAR, last_write_nonce VARCHAR);
CREATE TABLE events (app_name VARCHAR NOT NULL, user_id VARCHAR NOT NULL, session_id VARCHAR NOT NULL,
  event_id VARCHAR NOT NULL, invocation_id VARCHAR NOT NULL, author VARCHAR NOT NULL,
  event_timestamp TIMESTAMP NOT NULL, sequence_num BIGINT NOT NULL, event_data_json VARCHAR NOT NULL,
  state_delta_json VARCHAR, has_state_delta BOOLEAN NOT NULL, created_time TIMESTAMP NOT NULL,
  is_after_rewind BOOLEAN NOT NULL);
CREATE TABLE app_states (app_name VARCHAR NOT NULL, state_json VARCHAR, update_time TIMESTAMP NOT NULL,
  version BIGINT NOT NULL);
CREATE TABLE user_states (app_name VARCHAR NOT NULL, user_id VARCHAR NOT NULL, state_json VARCHAR,
  update_time TIMESTAMP NOT NULL, version BIGINT NOT NULL);
"""


def _utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).replace(tzinfo=None)


def seed_store(path: Path, count: int = 2, *, deleted: int = 0) -> str:
    """``count`` live sessions (plus ``deleted`` soft-deleted ones), one RLM iteration each."""
    db = duckdb.connect(str(path))
    db.execute(DDL)
    users: dict[str, dict] = {}
    for n in range(count + deleted):
        user, sid = f"user-{n % 2}", f"s-{n:05d}"
        state: dict = {}
        version = 1
        for event in iteration_events(n, BASE + 100 * n):
            event.actions.state_delta = {k: v for k, v in event.actions.state_delta.items()
                                         if not k.startswith("temp:")}  # the service trims temp:
            delta = event.actions.state_delta
            version += 1
            state.update({k: v for k, v in delta.items() if not k.startswith(("app:", "user:"))})
            users.setdefault(user, {}).update({k[5:]: v for k, v in delta.items() if k.startswith("user:")})
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, FALSE)",
                       (APP, user, sid, event.id, event.invocation_id, event.author, _utc(event.timestamp),
                        version * 1000, event.model_dump_json(by_alias=True), json.dumps(delta) if delta else None,
                        bool(delta), _utc(event.timestamp)))
        db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 'nonce')",
                   (APP, user, sid, json.dumps(state), _utc(BASE + 100 * n), _utc(BASE + 100 * n + 5), version,
                    n >= count))
    for user, state in users.items():
        db.execute("INSERT INTO user_states VALUES (?, ?, ?, ?, 1)", (APP, user, json.dumps(state), _utc(BASE)))
    db.close()
    return str(path)
