"""``normalize_trace``: the reviewable, stable JSON of one run, for a syrupy snapshot.

What a reviewer reads in ``snapshots/<scenario>.json``:

* ``turns``: per user turn, its session, user and outcome (and an exception that escaped the runner);
* ``events``: per appended event, its index, turn, author, function calls, ``escalate``, and the state
  delta both as the writer emitted it and as it was appended (after the service trimmed ``temp:``);
* ``final_state``: per session, what storage holds at the end: ``session``, ``app`` and ``user`` state (the keys
  holding a value: a null stored for a cleared key is ``none_deletes``' to judge, not every snapshot's);
* ``executions``: per Job_B run, its iteration, registry status, Job_B's own status, stdout size, FINAL
  answer and number of sub-LM calls;
* ``llm_requests``: the sequence of model requests as ``(agent, turn)``. Never the prompt text: prompts
  drift with every wording change, and the checks already read them.

What is left out on purpose: the LLM mode and the session-service class (a scripted run, its replay and
a run on another session service must produce the same snapshot; that is the point of comparing them),
event text, and invocation ids as fields.

Values that change from run to run are rewritten by the one table below, ``REDACTIONS``. Numbered
placeholders (``<artifact:1>``) count in order of first appearance while the document is walked in the
order it is written to disk (keys sorted), so the same run always gets the same numbers.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..trace.model import Trace

Json = Any


# --- what makes a value volatile ---------------------------------------------------------------------

_TIME_WORDS = frozenset({"timestamp", "time", "duration", "latency", "elapsed", "at"})
_ISO_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b")
# 12 lowercase hex digits, at least one a-f (so a number like 200000000000 stays), not part of a longer token.
_HEX12 = re.compile(r"(?<![0-9A-Za-z-])(?=[0-9]*[a-f])[0-9a-f]{12}(?![0-9A-Za-z-])")
_PATH_END = r"(?=[/\s'\"]|$)"


def _words(key: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", key.lower()) if w]


def is_time_key(key: str) -> bool:
    """``created_at``, ``duration_s``, ``latency_ms``, ``timestamp``, ``temp:rlm:elapsed`` ..."""
    return bool(_TIME_WORDS.intersection(_words(key)))


def _is_artifact_key(key: str) -> bool:
    return _words(key)[-2:] == ["artifact", "id"]


def _is_run_key(key: str) -> bool:
    return _words(key)[-2:] == ["run", "id"]


def _temp_roots() -> list[str]:
    roots = {tempfile.gettempdir(), "/tmp", "/var/tmp"}
    roots |= {str(Path(r).resolve()) for r in roots}
    return sorted(roots, key=len, reverse=True)


def _path_rules(home: Path | None) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]:
    # A -j worker's temporary folder (harness/run/pool.py's spawn_worker) holds its runs' folders: the same
    # trace normalizes alike in the worker, whose temporary folder it is, and in the parent.
    temp = "|".join(re.escape(r.rstrip("/")) for r in _temp_roots())
    temp = rf"(?:{temp})(?:/rlm-worker-[^/\s'\"]+)?"
    homes = [rf"{temp}/rlm-conformance-[^/\s'\"]+"]  # the runner's TemporaryDirectory(prefix=...)
    if home is not None:
        homes.insert(0, "|".join(re.escape(str(p).rstrip("/")) for p in {home, home.resolve()}))
    home_or_volume = re.compile(rf"(?:{'|'.join(homes)})(?P<volume>/volume{_PATH_END})?{_PATH_END}")
    return [
        (home_or_volume, lambda m: "<volume>" if m.group("volume") else "<home>"),
        # A Unity Catalog volume root: the Databricks backend's twin of the local volume folder.
        (re.compile(rf"/Volumes/[^/\s'\"]+/[^/\s'\"]+/[^/\s'\"]+{_PATH_END}"), lambda m: "<volume>"),
        # Any other temporary folder: its (random) first component goes.
        (re.compile(rf"{temp}/[^/\s'\"]+{_PATH_END}"), lambda m: "<tmp>"),
    ]


@dataclass(frozen=True)
class Numbered:
    """Known values of one kind (plus, optionally, a pattern for unknown ones) -> ``<kind:n>``."""

    kind: str
    known: Callable[[Trace], Iterable[str]]
    pattern: re.Pattern[str] | None = None


def _invocation_ids(trace: Trace) -> Iterable[str]:
    yield from (e.invocation_id for e in trace.events)
    yield from (r.invocation_id for r in trace.llm_requests)
    yield from (s.invocation_id for s in trace.live_states)
    yield from (row.invocation_id for p in trace.persisted for row in p.events)


def _artifact_ids(trace: Trace) -> Iterable[str]:
    yield from (x.artifact_id for x in trace.executions)
    yield from (str(v) for k, v in _state_items(trace) if _is_artifact_key(k) and v)


def _run_ids(trace: Trace) -> Iterable[str]:
    sessions = {t.session_id for t in trace.turns}
    yield from (str(v) for k, v in _state_items(trace) if _is_run_key(k) and v and str(v) not in sessions)


def _state_items(trace: Trace) -> Iterable[tuple[str, Any]]:
    for e in trace.events:
        yield from e.emitted_delta.items()
        yield from e.appended_delta.items()
    for p in trace.persisted:
        yield from (*p.session_state.items(), *p.app_state.items(), *p.user_state.items())
    for s in trace.live_states:
        yield from s.state.items()


# --- THE table -----------------------------------------------------------------------------------------
# Every volatile value a snapshot must not hold, in the order the rewrites apply to a string (a path loses
# its temporary folder before the artifact id inside it is numbered; invocation UUIDs go before the 12-hex
# artifact pattern could bite their tail). Add a row here, never a special case elsewhere.
#
#   what                               becomes                 why it varies
#   ---------------------------------  ----------------------  ---------------------------------------------
#   value of a time-named key          <redacted>              wall clock: created_at, duration_s, latency_ms,
#     (words timestamp/time/duration/                          timestamp ... (None stays None)
#     latency/elapsed/at)
#   <tmp>/rlm-conformance-*/volume     <volume>                the runner's fresh TemporaryDirectory per run
#   <tmp>/rlm-conformance-* (or the    <home>                  same folder, outside the volume (DuckDB file)
#     home= folder)
#   /Volumes/<cat>/<schema>/<vol>      <volume>                UC volume root: local and Databricks agree
#   any other /tmp/<dir>               <tmp>                   tempfile's random names
#   invocation ids (e-<uuid>, ...)     <invocation:n>          ADK makes a new one per invocation
#   artifact ids (12 hex; every        <artifact:n>            uuid4().hex[:12] at delegation time
#     *artifact_id value too)
#   run ids that are not session ids   <run:n>                 a Jobs API run id; run ids equal to session
#                                                              ids are stable and kept
#   ISO date-times inside strings      <redacted>              wall clock
REDACT_TIME_KEY = "<redacted>"
NUMBERED: tuple[Numbered, ...] = (
    Numbered("invocation", _invocation_ids),
    Numbered("artifact", _artifact_ids, _HEX12),
    Numbered("run", _run_ids),
)
REDACT_DATETIME = "<redacted>"


@dataclass
class _Redactor:
    trace: Trace
    home: Path | None
    numbers: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.paths = _path_rules(self.home)
        self.run_ids = {v for v in _run_ids(self.trace) if v}
        self.known: list[tuple[str, re.Pattern[str] | None]] = []
        for rule in NUMBERED:
            values = sorted({v for v in rule.known(self.trace) if v}, key=len, reverse=True)
            parts = [re.escape(v) for v in values] + ([rule.pattern.pattern] if rule.pattern else [])
            self.known.append((rule.kind, re.compile("|".join(parts)) if parts else None))

    def number(self, kind: str, value: str) -> str:
        seen = self.numbers.setdefault(kind, {})
        return f"<{kind}:{seen.setdefault(value, len(seen) + 1)}>"

    def string(self, text: str) -> str:
        for pattern, replace in self.paths:
            text = pattern.sub(replace, text)
        for kind, pattern in self.known:
            if pattern is not None:
                text = pattern.sub(lambda m, kind=kind: self.number(kind, m.group(0)), text)
        return _ISO_DATETIME.sub(REDACT_DATETIME, text)

    def walk(self, value: Json, key: str | None = None) -> Json:
        if key is not None and value is not None and is_time_key(key):
            return REDACT_TIME_KEY
        if isinstance(value, dict):
            return {k: self.walk(value[k], str(k)) for k in sorted(value, key=str)}
        if isinstance(value, (list, tuple)):
            return [self.walk(v) for v in value]
        if isinstance(value, str):
            return self.string(value)
        if key is not None and _is_run_key(key) and not isinstance(value, bool) and isinstance(value, int):
            return self.number("run", str(value)) if str(value) in self.run_ids else value
        return value


# --- the document ---------------------------------------------------------------------------------------

def _held(state: dict[str, Any]) -> dict[str, Any]:
    """The keys that hold a value. A cleared key is absent on a service that deletes on None and null on one that
    stores it (ADK's own): which of the two a service keeps is judged once, by ``none_deletes`` and the
    session-service probe, so the same run snapshots alike on both."""
    return {key: value for key, value in state.items() if value is not None}


def _document(trace: Trace) -> dict[str, Json]:
    sessions = list(dict.fromkeys(t.session_id for t in trace.turns))
    final_state = {}
    for session_id in sessions:
        snap = trace.final_persisted(session_id)
        if snap is not None:
            final_state[session_id] = {"session": _held(snap.session_state), "app": _held(snap.app_state),
                                       "user": _held(snap.user_state)}
    return {
        "scenario": trace.scenario,
        "target": trace.target,
        "turns": [{"turn": t.turn, "session": t.session_id, "user": t.user_id,
                   "outcome": t.outcome.model_dump(mode="json", exclude={"crash", "reported_by"}),
                   "run_error": t.run_error} for t in trace.turns],
        "events": [{"index": e.index, "turn": e.turn, "author": e.author, "function_calls": list(e.function_calls),
                    "escalate": e.escalate, "emitted_delta": e.emitted_delta, "appended_delta": e.appended_delta}
                   for e in trace.events],
        "final_state": final_state,
        "executions": [{"session": x.session_id, "iteration": x.iteration, "status": x.status,
                        "result_status": x.result_status, "stdout_bytes": x.stdout_bytes,
                        "final_answer": x.final_answer, "sublm_calls": x.sublm_calls} for x in trace.executions],
        "llm_requests": [{"agent": r.agent, "turn": r.turn} for r in trace.llm_requests],
    }


def normalize_trace(trace: Trace, *, home: Path | None = None) -> dict[str, Json]:
    """The stable JSON of ``trace`` (keys sorted); ``home`` is the run's folder when it was not a temp one."""
    return _Redactor(trace, home).walk(_document(trace))


PLACEHOLDER = re.compile(r"<(?:redacted|volume|home|tmp|(?:invocation|artifact|run):\d+)>")
"""What the table above writes in place of a volatile value: a value holding one is the run's, not the agent's."""


def normalize_state(state: dict[str, Any], trace: Trace, *, home: Path | None = None) -> dict[str, Any]:
    """A session's state with what the run drew afresh (ids, wall clock, temporary paths) rewritten by the table
    above, as the trace's snapshot writes it — in keys too (an agent may name a key after an artifact id)."""
    redactor = _Redactor(trace, home)
    return {redactor.string(str(key)): redactor.walk(state[key], str(key)) for key in sorted(state, key=str)}


def holds_placeholder(value: Json) -> bool:
    """Whether ``value`` (or a key or item inside it) holds a placeholder ``normalize_state`` wrote."""
    if isinstance(value, str):
        return bool(PLACEHOLDER.search(value))
    if isinstance(value, dict):
        return any(holds_placeholder(str(k)) or holds_placeholder(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_placeholder(v) for v in value)
    return False
