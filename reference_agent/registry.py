"""Artifact registry: one row per delegated code artifact, on the shared SQL engine.

Lifecycle::

    pending --mark_executed--> executed --mark_consumed--> consumed
    pending --mark_failed----> failed      (Job_B could not be run at all)

**"Consumed" means analysis-consumed** (Option 2 of seed 000, Phase 0): an
artifact is consumed once ``results_processor`` has finished analysing its
executed results, and the stage-tracking plugin marks it then. Option 1
(consumed = executed) was rejected because an artifact that ran but whose
output nobody analysed — the loop ended, the model call failed — must stay
visible as *not consumed*; with this choice ``executed`` is exactly that state.

A failing user program is still ``executed`` (its stderr is the result);
``failed`` is only for when Job_B produced no result at all.

Every transition is a compare-and-set ``UPDATE ... WHERE status = :from``
checked through its affected-row count, so it holds on engines whose
``transaction()`` is a no-op.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic_core import to_jsonable_python

from reference_agent.storage.sql import SqlEngine, affected_rows, ensure_tables

TABLE = "artifacts"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("artifact_id", "STRING"),
    ("app_name", "STRING"),
    ("user_id", "STRING"),
    ("session_id", "STRING"),
    ("iteration", "BIGINT"),
    ("code_path", "STRING"),
    ("status", "STRING"),
    ("result_json_path", "STRING"),
    ("stdout_path", "STRING"),
    ("stderr_path", "STRING"),
    # Epoch seconds, like the session tables.
    ("created_at", "DOUBLE"),
    ("executed_at", "DOUBLE"),
    ("consumed_at", "DOUBLE"),
    ("metadata_json", "JSON"),
)
_SELECT = "SELECT " + ", ".join(name for name, _ in COLUMNS) + f" FROM {TABLE}"


class ArtifactStatus(str, Enum):
    PENDING = "pending"
    EXECUTED = "executed"
    CONSUMED = "consumed"
    FAILED = "failed"


class RegistryError(Exception):
    """Base of the registry's errors."""


class ArtifactNotFoundError(RegistryError, LookupError):
    pass


class ArtifactExistsError(RegistryError):
    pass


class IllegalTransitionError(RegistryError, ValueError):
    pass


@dataclass(frozen=True)
class ArtifactRecord:
    artifact_id: str
    app_name: str
    user_id: str
    session_id: str
    iteration: int
    code_path: str
    status: ArtifactStatus
    result_json_path: str | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    created_at: float = 0.0
    executed_at: float | None = None
    consumed_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: tuple) -> ArtifactRecord:
        values = dict(zip((name for name, _ in COLUMNS), row, strict=True))
        metadata_json = values.pop("metadata_json")
        values["status"] = ArtifactStatus(values["status"])
        return cls(**values, metadata=json.loads(metadata_json) if metadata_json else {})


def ensure_schema(engine: SqlEngine) -> None:
    ensure_tables(engine, {TABLE: COLUMNS})


class ArtifactRegistry:
    def __init__(self, engine: SqlEngine, *, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self._clock = clock
        # Writes made through this object; a reader that sees the same number twice knows nothing it wrote
        # changed in between (the harness polls statuses after every event: reference_agent/conformance/common.py).
        self.revision = 0
        ensure_schema(engine)

    def register(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        iteration: int,
        code_path: str,
        artifact_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ArtifactRecord:
        """Add a ``pending`` artifact; raises ArtifactExistsError for a taken id."""
        record = ArtifactRecord(
            artifact_id=artifact_id or f"art_{uuid.uuid4().hex}",
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            iteration=iteration,
            code_path=code_path,
            status=ArtifactStatus.PENDING,
            created_at=self._clock(),
            metadata=dict(metadata or {}),
        )
        # Insert-if-absent in one atomic statement (Delta enforces no primary key).
        inserted = affected_rows(self.engine.execute(
            f"MERGE INTO {TABLE} t USING (SELECT :artifact_id AS artifact_id) s ON t.artifact_id = s.artifact_id"
            " WHEN NOT MATCHED THEN INSERT (artifact_id, app_name, user_id, session_id, iteration, code_path,"
            " status, created_at, metadata_json) VALUES (s.artifact_id, :app_name, :user_id, :session_id,"
            " :iteration, :code_path, :status, :created_at, :metadata_json)",
            {
                "artifact_id": record.artifact_id,
                "app_name": app_name,
                "user_id": user_id,
                "session_id": session_id,
                "iteration": iteration,
                "code_path": code_path,
                "status": record.status.value,
                "created_at": record.created_at,
                "metadata_json": _dumps(record.metadata),
            },
        ))
        if not inserted:
            raise ArtifactExistsError(f"artifact {record.artifact_id!r} is already registered; pass a new artifact_id")
        self.revision += 1
        return record

    def mark_executed(
        self,
        artifact_id: str,
        *,
        result_json_path: str,
        stdout_path: str | None = None,
        stderr_path: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ArtifactRecord:
        """pending -> executed, recording where Job_B's outputs are; ``metadata`` is merged in."""
        with self.engine.transaction():
            current = self._require(artifact_id)
            self._transition(
                current,
                ArtifactStatus.EXECUTED,
                "result_json_path = :result_json_path, stdout_path = :stdout_path, stderr_path = :stderr_path,"
                " executed_at = :now, metadata_json = :metadata_json",
                {
                    "result_json_path": result_json_path,
                    "stdout_path": stdout_path,
                    "stderr_path": stderr_path,
                    "metadata_json": _dumps({**current.metadata, **(metadata or {})}),
                },
            )
            return self._require(artifact_id)

    def mark_failed(self, artifact_id: str, message: str) -> ArtifactRecord:
        """pending -> failed: Job_B could not be run; metadata gets ``error`` and ``failed_at``."""
        with self.engine.transaction():
            current = self._require(artifact_id)
            self._transition(
                current,
                ArtifactStatus.FAILED,
                "metadata_json = :metadata_json",
                {"metadata_json": _dumps({**current.metadata, "error": message, "failed_at": self._clock()})},
            )
            return self._require(artifact_id)

    def mark_consumed(self, artifact_id: str) -> bool:
        """executed -> consumed. True if it transitioned, False if already consumed.

        Raises IllegalTransitionError from pending/failed: nothing was analysed.
        """
        with self.engine.transaction():
            current = self._require(artifact_id)
            if current.status is ArtifactStatus.CONSUMED:
                return False
            self._transition(current, ArtifactStatus.CONSUMED, "consumed_at = :now", {})
            return True

    def get(self, artifact_id: str) -> ArtifactRecord | None:
        rows = self.engine.execute(f"{_SELECT} WHERE artifact_id = :artifact_id", {"artifact_id": artifact_id})
        return ArtifactRecord.from_row(rows[0]) if rows else None

    def list_for_session(self, app_name: str, user_id: str, session_id: str) -> list[ArtifactRecord]:
        rows = self.engine.execute(
            f"{_SELECT} WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id"
            " ORDER BY iteration, created_at, artifact_id",
            {"app_name": app_name, "user_id": user_id, "session_id": session_id},
        )
        return [ArtifactRecord.from_row(row) for row in rows]

    def statuses_for_session(self, app_name: str, user_id: str, session_id: str) -> dict[str, ArtifactStatus]:
        """``{artifact_id: status}`` of one session's artifacts: ``list_for_session`` without the rest of the rows."""
        rows = self.engine.execute(
            f"SELECT artifact_id, status FROM {TABLE}"
            " WHERE app_name = :app_name AND user_id = :user_id AND session_id = :session_id",
            {"app_name": app_name, "user_id": user_id, "session_id": session_id},
        )
        return {artifact_id: ArtifactStatus(status) for artifact_id, status in rows}

    # --- helpers -------------------------------------------------------------

    def _require(self, artifact_id: str) -> ArtifactRecord:
        record = self.get(artifact_id)
        if record is None:
            raise ArtifactNotFoundError(f"artifact {artifact_id!r} is not registered")
        return record

    def _transition(
        self, current: ArtifactRecord, target: ArtifactStatus, set_sql: str, params: Mapping[str, Any]
    ) -> None:
        source = _ALLOWED_FROM[target]
        if current.status is not source:
            raise IllegalTransitionError(
                f"artifact {current.artifact_id!r} is {current.status.value}; "
                f"only {source.value} -> {target.value} is allowed"
            )
        updated = affected_rows(self.engine.execute(
            f"UPDATE {TABLE} SET status = :target, {set_sql} WHERE artifact_id = :artifact_id AND status = :source",
            {**params, "target": target.value, "source": source.value, "artifact_id": current.artifact_id,
             "now": self._clock()},
        ))
        if updated == 0:  # another writer moved it between our read and this update
            raise IllegalTransitionError(f"artifact {current.artifact_id!r} changed concurrently; re-read it")
        self.revision += 1


_ALLOWED_FROM = {
    ArtifactStatus.EXECUTED: ArtifactStatus.PENDING,
    ArtifactStatus.FAILED: ArtifactStatus.PENDING,
    ArtifactStatus.CONSUMED: ArtifactStatus.EXECUTED,
}


def _dumps(value: Mapping[str, Any]) -> str:
    return json.dumps(to_jsonable_python(value), ensure_ascii=False)
