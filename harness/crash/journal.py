"""``CrashJournal``: what the client of a crash run observed, written so that SIGKILL cannot take it back.

The journal is the run's observer (``RunOptions.observer``): the harness's own session-service wrapper tells it of
each append (before it asks the store, after the store acknowledged it), the scripted endpoint of each model step it
served. Each line (JSON) is flushed and fsynced before the run goes on, so what the journal says was acknowledged
was acknowledged. At its crash point it writes ``killing`` and SIGKILLs its own process: the agent is never patched.

Before the turns (a recovery), it reads the store as the crash left it: ``get_session`` and ``list_sessions`` of
each session the crashed run had touched, and the target's executions (``BuiltTarget.list_executions``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..trace.model import EventRecord, ExecutionRecord
from .points import CrashPoint


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=repr)


class CrashJournal:
    def __init__(self, path: Path, *, kill: CrashPoint | None = None,
                 read_sessions: list[tuple[str, str]] = (), then: Any = None) -> None:
        self.path = path
        self.kill = kill
        self.then = then  # called with the journal once the store is read (the durability probe ends there)
        self.read_sessions = list(read_sessions)
        self.reads: dict[str, Any] = {}
        self.profile: Any = None
        self._lock = threading.Lock()
        self._file = path.open("a", encoding="utf-8")

    def _write(self, line: dict[str, Any]) -> None:
        with self._lock:
            self._file.write(json.dumps(_jsonable(line), sort_keys=True) + "\n")
            self._file.flush()
            os.fsync(self._file.fileno())

    def _die(self, line: dict[str, Any]) -> None:
        self._write({"kind": "killing", **line})
        os.kill(os.getpid(), signal.SIGKILL)

    def before_append(self, index: int, event: Any) -> None:
        if self.kill is not None and self.kill.kind == "before" and self.kill.index == index:
            self._die({"point": "before", "index": index, "id": event.id, "author": event.author or ""})

    def after_append(self, appended: Any, record: EventRecord) -> None:
        self._write({"kind": "ack", "id": appended.id, "record": record.model_dump(mode="json")})
        if self.kill is not None and self.kill.kind == "after" and self.kill.index == record.index:
            self._die({"point": "after", "index": record.index, "id": appended.id, "author": record.author})

    def model_step_served(self, agent: str, index: int) -> None:
        self._write({"kind": "step", "agent": agent, "index": index})

    async def before_turns(self, built: Any, app_name: str, scenario: Any) -> None:
        self.profile = built.profile
        if not self.read_sessions:
            return
        store, sessions, listed = built.session_service, {}, {}
        for user, session_id in self.read_sessions:
            try:
                found = await store.get_session(app_name=app_name, user_id=user, session_id=session_id)
                sessions[session_id] = None if found is None else {
                    "ids": [e.id for e in found.events if not e.partial],
                    "state": {k: v for k, v in found.state.items() if not k.startswith("temp:")}}
            except Exception as exc:  # noqa: BLE001 - an unreadable session is what session_readable_prefix reports
                sessions[session_id] = {"error": f"{type(exc).__name__}: {exc}"}
            if user not in listed:
                try:
                    listed[user] = [s.id for s in (await store.list_sessions(app_name=app_name, user_id=user)).sessions]
                except Exception as exc:  # noqa: BLE001 - as above
                    listed[user] = {"error": f"{type(exc).__name__}: {exc}"}
        executions = []
        if built.list_executions is not None:
            for user, session_id in self.read_sessions:
                executions += [x.model_dump(mode="json") for x in built.list_executions(app_name, user, session_id)]
        self.reads = _jsonable({"sessions": sessions, "listed": listed, "executions": executions})
        if self.then is not None:
            self.then(self)

    def close(self) -> None:
        self._file.close()


@dataclass
class Journal:
    """A journal read back: acknowledged appends in order, the append the kill interrupted, the steps served."""

    acks: list[tuple[str, EventRecord]] = field(default_factory=list)  # (event id, record)
    killing: dict[str, Any] | None = None
    served: dict[str, list[int]] = field(default_factory=dict)  # agent -> step indices

    @property
    def records(self) -> list[EventRecord]:
        return [record for _, record in self.acks]


def read_journal(path: Path) -> Journal:
    journal = Journal()
    if not path.exists():
        return journal
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line the kill cut (never one fsynced whole)
        if item["kind"] == "ack":
            journal.acks.append((item["id"], EventRecord.model_validate(item["record"])))
        elif item["kind"] == "step":
            journal.served.setdefault(item["agent"], []).append(int(item["index"]))
        elif item["kind"] == "killing":
            journal.killing = item
    return journal


def executions_read(reads: dict[str, Any]) -> list[ExecutionRecord]:
    return [ExecutionRecord.model_validate(x) for x in reads.get("executions", [])]
