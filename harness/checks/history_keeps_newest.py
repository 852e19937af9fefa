"""The user's history keeps the newest turns: after every turn its last entry is that turn's question."""

from __future__ import annotations

import json

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_snapshot, show

NAME = "history_keeps_newest"


def _history(snapshot, key: str):
    """The persisted history list of ``key`` in a snapshot (user:/app: keys live in their own rows, unprefixed)."""
    for prefix, state in (("user:", snapshot.user_state), ("app:", snapshot.app_state)):
        if key.startswith(prefix):
            return state.get(key.removeprefix(prefix))
    return snapshot.session_state.get(key)


def _wrong_shape(key: str, value: object, snapshot) -> CheckResult:
    """A history that is no list has no newest entry to find: the check cannot judge it, and says what it needs."""
    return not_applicable(NAME, f"The profile's history_key {key!r} holds a {type(value).__name__} ({show(value)} in "
                                f"{name_snapshot(snapshot)}); this check needs a list of entries, newest last, each "
                                f"holding its turn's question. Fix: map history_key to a key holding a list, or "
                                f"keep the history as one (profile field history_key).")


@check(
    NAME,
    title="The history fold keeps the newest entries",
    why="A bounded history must drop its oldest entries, never the newest: after every turn the persisted history "
        "ends with that turn (its question), and holds no more than the limit. A fold that keeps the first N "
        "entries silently stops remembering anything once the history is full.",
    dod_item="003: user-scoped history across sessions (bounded, newest kept)",
)
def history_keeps_newest(ctx: CheckContext) -> CheckResult:
    trace, key = ctx.trace, ctx.profile.history_key
    if key is None:
        return not_applicable(NAME, f"No history to follow: {ctx.profile.unmapped('history_key')}.")
    limit = ctx.scenario.limits.history_max_entries
    checked: list[str] = []
    problems: list[str] = []
    missing: list[str] = []  # turns that ended without any history: a fold that never happened
    for turn in trace.turns:
        snapshot = next((p for p in trace.persisted if p.session_id == turn.session_id and p.turn == turn.turn), None)
        history = _history(snapshot, key) if snapshot is not None else None
        if history is not None and not isinstance(history, list):
            return _wrong_shape(key, history, snapshot)
        if not isinstance(history, list) or not history:
            if snapshot is not None and not turn.run_error:  # the turn ran to its end: its fold is owed
                missing.append(f"{name_snapshot(snapshot)}: no {key!r} history list after turn {turn.turn} "
                               f"(session {turn.session_id}); expected its question {show(turn.message)} as the last "
                               f"entry" + ("" if history is None else f" (it holds {show(history)})"))
            continue
        where = f"{name_snapshot(snapshot)}: {key!r} ({len(history)} entries)"
        entries = [json.dumps(entry, ensure_ascii=False, default=str) for entry in history]
        question = json.dumps(turn.message, ensure_ascii=False)[1:-1]  # as it appears inside an entry's JSON
        holding = [i for i, text in enumerate(entries) if question in text]
        if not holding:
            problems.append(f"{where} has no entry for turn {turn.turn}'s question {show(turn.message)}: the newest "
                            f"turn was dropped (oldest entries kept?)")
        elif holding[-1] != len(entries) - 1:
            problems.append(f"{where}: turn {turn.turn}'s question {show(turn.message)} is entry {holding[-1]}, "
                            f"not the last one")
        elif limit is not None and len(history) > limit:
            problems.append(f"{where} holds more than the limit of {limit} entries")
        else:
            checked.append(where)
    if not checked and not problems and not missing:
        return not_applicable(NAME, f"No turn ran to its end with a persisted snapshot: no {key!r} history owed.")
    if missing and not checked and not problems:
        return failed(NAME, f"The profile maps history_key {key!r}, but no turn of {len(missing)} that ran to their "
                            f"end left a {key!r} history: the history is never folded.", capped(missing))
    problems += missing
    if problems:
        return failed(NAME, f"{len(problems)} turn(s) left a history that does not end with that turn.",
                      capped(problems))
    return passed(NAME, f"After each of {len(checked)} turn(s) the history ends with that turn's question"
                        + (f" and holds at most {limit} entries." if limit else "."))
