"""Hand-made runs for the diff's tests: a scenario's result and trace built from a few fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.checks.base import CheckResult, Status
from harness.report.json_report import render_json
from harness.result import RunReport, ScenarioResult
from harness.trace.model import (EventRecord, LlmRequestRecord, PersistedEventRow, PersistedSnapshot, Trace, TurnOutcome,
                                 TurnRecord)

SESSION = "s-0"


def event(index: int, author: str, delta: dict[str, Any] | None = None, *, turn: int = 0,
          invocation: str = "e-11111111-2222-3333-4444-555555555555", calls: tuple[str, ...] = ()) -> EventRecord:
    delta = dict(delta or {})
    return EventRecord(index=index, session_id=SESSION, user_id="u1", turn=turn, invocation_id=invocation,
                       author=author, emitted_delta=delta,
                       appended_delta={k: v for k, v in delta.items() if not k.startswith("temp:")},
                       function_calls=list(calls))


def request(index: int, agent: str, system: str = "You analyse.", contents: str = "question", *,
            invocation: str = "e-11111111-2222-3333-4444-555555555555") -> LlmRequestRecord:
    return LlmRequestRecord(index=index, agent=agent, turn=0, invocation_id=invocation, system_instruction=system,
                            contents_text=contents)


def row(seq: int, author: str, delta: dict[str, Any] | None = None) -> PersistedEventRow:
    return PersistedEventRow(seq=seq, author=author, invocation_id="e-11111111-2222-3333-4444-555555555555",
                             state_delta=dict(delta or {}))


def trace(name: str, events: list[EventRecord] = (), requests: list[LlmRequestRecord] = (),
          final: dict[str, Any] | None = None, rows: list[PersistedEventRow] = ()) -> Trace:
    persisted = [PersistedSnapshot(session_id=SESSION, user_id="u1", turn=0, session_state=dict(final or {}),
                                   app_state={}, user_state={}, events=list(rows), source="rows", state_bytes=0)]
    return Trace(scenario=name, target="pkg.agent:app", llm_mode="replay", session_service="InMemorySessionService",
                 turns=[TurnRecord(turn=0, session_id=SESSION, user_id="u1", message="hi", outcome=TurnOutcome())],
                 events=list(events), llm_requests=list(requests), persisted=persisted)


def result(name: str, checks: dict[str, str], the_trace: Trace | None = None, *, error: str | None = None,
           evidence: dict[str, list[str]] | None = None) -> ScenarioResult:
    evidence = evidence or {}
    made = tuple(CheckResult(check, Status(status), f"{check} said {status}", tuple(evidence.get(check, ())))
                 for check, status in checks.items())
    return ScenarioResult(scenario=name, description="", target="pkg.agent:app", llm_mode="replay",
                          session_service="InMemorySessionService", checks=made if error is None else (),
                          trace=the_trace if the_trace is not None else trace(name), duration_s=0.1, error=error)


def run(*results: ScenarioResult) -> RunReport:
    return RunReport(results=tuple(results), started_at="2026-01-01T00:00:00+00:00", machine="test",
                     tool_version="0")


def write(report: RunReport, folder: Path) -> Path:
    """``report`` as the reports folder ``run`` writes (its conformance.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conformance.json").write_text(render_json(report), encoding="utf-8")
    return folder
