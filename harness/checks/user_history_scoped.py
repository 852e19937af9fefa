"""(003-1) A user's history stays with that user: never in another user's state or prompts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..json_walk import strings_in
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_request, name_snapshot, show
from .timeline import session_of_request

NAME = "user_history_scoped"
NEEDLE_CHARS = 60
MIN_NEEDLE = 12


@dataclass(frozen=True)
class Question:
    """A user's question as history would quote it: its first characters, whitespace collapsed."""

    user: str
    turn: int
    needle: str


def needle_of(message: str) -> str:
    return " ".join(message.split())[:NEEDLE_CHARS]


def _flat(value: Any) -> str:
    """Every string in ``value``, whitespace collapsed (as a history entry cuts a question)."""
    return "\n".join(" ".join(s.split()) for s in strings_in(value))


def _found(questions: list[Question], text: str) -> list[Question]:
    return [q for q in questions if q.needle in text]


@check(
    NAME,
    title="User history never reaches another user",
    why="user: state is shared by one user's sessions and by nobody else's. A history kept in app: state, in a "
        "global or keyed by the wrong id shows one user's questions to another user — a privacy leak. No user's "
        "persisted user_state, no persisted app_state and no analyst prompt of a user may quote a question only "
        "another user asked earlier. And the history must work: the first analyst request of a user's later "
        "session shows that user's latest question from an earlier session (unless a context budget may cut it).",
    dod_item="003: user:-scoped history, seen in later sessions of the same user, never in another user's",
)
def user_history_scoped(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if reason := profile.unmapped("history_key"):
        return not_applicable(NAME, f"The target keeps no user history to scope: {reason}.")
    turns = sorted(trace.turns, key=lambda t: t.turn)
    users = list(dict.fromkeys(t.user_id for t in turns))
    asked: dict[str, set[str]] = {u: {needle_of(t.message) for t in turns if t.user_id == u} for u in users}
    questions = [Question(t.user_id, t.turn, needle_of(t.message)) for t in turns
                 if len(needle_of(t.message)) >= MIN_NEEDLE
                 and not any(needle_of(t.message) in asked[u] for u in users if u != t.user_id)]

    def foreign(user: str, turn: int, *, inclusive: bool) -> list[Question]:
        """Questions only other users asked, before ``turn`` (or up to it, for state read after the turn)."""
        return [q for q in questions if q.user != user and (q.turn <= turn if inclusive else q.turn < turn)]

    session_user = {t.session_id: t.user_id for t in turns}
    problems: list[str] = []
    compared = {"snapshots": 0, "requests": 0, "own": 0}
    shown: list[str] = []
    if ctx.scenario.limits.context_budget_tokens is None:
        compared["own"] = _own_history_shown(ctx, turns, session_user, problems, shown)
    for snapshot in trace.persisted:
        candidates = foreign(snapshot.user_id, snapshot.turn, inclusive=True)
        if not candidates:
            continue
        compared["snapshots"] += 1
        for scope, state in (("user_state", snapshot.user_state), ("app_state", snapshot.app_state)):
            for key, value in state.items():
                for q in _found(candidates, _flat(value)):
                    seen_by = "every user" if scope == "app_state" else f"user {snapshot.user_id}"
                    problems.append(f"{name_snapshot(snapshot)}: {scope} key {key!r} (seen by {seen_by}) quotes "
                                    f"user {q.user}'s question {show(q.needle)} (turn {q.turn})")
    for request in sorted(trace.requests_of(profile.analyst), key=lambda r: r.index):
        session = session_of_request(trace, request)
        user = session_user.get(session or "")
        candidates = foreign(user, request.turn, inclusive=False) if user else []
        if not candidates:
            continue
        compared["requests"] += 1
        text = _flat(request.system_instruction + "\n" + request.contents_text)
        for q in _found(candidates, text):
            problems.append(f"{name_request(request)} of user {user} (session {session}) shows user {q.user}'s "
                            f"question {show(q.needle)} (turn {q.turn})")
    if not any(compared.values()):
        return not_applicable(NAME, "No user's state or prompt comes after a question only another user asked, "
                                    "and no user has a second session.")
    if problems:
        return failed(NAME, f"{len(problems)} place(s) where the user history is out of its scope.",
                      capped(problems))
    return passed(NAME, f"{len(questions)} question(s) asked by only one user appear in none of the other users' "
                        f"{compared['snapshots']} persisted snapshot(s) nor {compared['requests']} analyst "
                        f"request(s), nor in app-wide state; {len(shown)} later session(s) of a user show "
                        f"that user's earlier question.", capped(shown))


def _own_history_shown(ctx: CheckContext, turns: list, session_user: dict[str, str], problems: list[str],
                       shown: list[str]) -> int:
    """The first analyst request of each session shows the user's latest question from an earlier session.

    Returns how many sessions were compared.
    """
    trace = ctx.trace
    first_request: dict[str, object] = {}
    for request in sorted(trace.requests_of(ctx.profile.analyst), key=lambda r: r.index):
        session = session_of_request(trace, request)
        if session is not None:
            first_request.setdefault(session, request)
    compared = 0
    for session, request in first_request.items():
        user = session_user.get(session)
        earlier = [t for t in turns if t.user_id == user and t.session_id != session and t.turn < request.turn
                   and len(needle_of(t.message)) >= MIN_NEEDLE]
        if user is None or not earlier:
            continue
        compared += 1
        latest = earlier[-1]
        if needle_of(latest.message) in _flat(request.system_instruction + "\n" + request.contents_text):
            shown.append(f"{name_request(request)}, the first of user {user}'s session {session}, shows the user's "
                         f"question {show(needle_of(latest.message))} from session {latest.session_id}")
        else:
            problems.append(f"{name_request(request)}, the first of user {user}'s session {session}, does not show "
                            f"the user's question {show(needle_of(latest.message))} from session {latest.session_id} "
                            f"(turn {latest.turn}): the user's history did not carry over")
    return compared
