"""(003-3) App-wide data saved in one user's session is seen by every later session of other users."""

from __future__ import annotations

from typing import Any

from ..trace.model import EventRecord
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, keys_list, name_event, name_request, name_snapshot, show
from .history_folded_by_event import stored_name
from .timeline import appended_events, session_of_request, unmapped_all

NAME = "app_data_shared"
_ABSENT = object()


def _needles(value: Any) -> list[str]:
    """What a prompt must show of an app value: a dict's item names, a list's items, else the value."""
    if isinstance(value, dict):
        return [str(k) for k in value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float))]
    return [] if value is None else [str(value)]


def _value_before(writes: list[EventRecord], key: str, turn: int, *, inclusive: bool) -> tuple[Any, EventRecord | None]:
    """The value the last write of ``key`` before ``turn`` (or up to it) left, and that write."""
    done = [e for e in writes if (e.turn <= turn if inclusive else e.turn < turn)]
    if not done:
        return _ABSENT, None
    last = done[-1]
    value = last.appended_delta.get(key, last.emitted_delta.get(key))
    return (_ABSENT if value is None else value), last


@check(
    NAME,
    title="App data is shared by every user",
    why="app: state (e.g. code snippets the analyst saved with a tool, profile app_tools) belongs to the whole app: "
        "once one user's "
        "session writes it, every later session of any other user must find it in persisted app_state — and, for "
        "the app keys the analyst's prompt shows, in that user's analyst prompts. A tool that should save app data "
        "but writes it to user:, session or temp: scope shares nothing.",
    dod_item="003: app:-scoped shared data visible to every user",
)
def app_data_shared(ctx: CheckContext) -> CheckResult:
    trace, profile, scenario = ctx.trace, ctx.profile, ctx.scenario
    if reason := unmapped_all(profile, "app_tools", "prompt_app_keys"):
        return not_applicable(NAME, f"The target shares no app data the profile knows of: {reason}.")
    events = appended_events(trace)
    problems: list[str] = []
    checked: list[str] = []

    # 1. A call of an app tool that wrote state must have written app: state.
    for event in events:
        tools = [t for t in event.function_responses if t in profile.app_tools]
        if tools and event.emitted_delta and not any(k.startswith("app:") for k in event.emitted_delta):
            problems.append(f"{name_event(event)}: {tools[0]} saved {keys_list(event.emitted_delta)}, none of them "
                            f"app: scope, so no other user will ever see it")

    # 2. Every app: key written by a user's event is in the persisted app_state of other users' later sessions.
    writes: dict[str, list[EventRecord]] = {}
    for event in events:
        for key in event.emitted_delta:
            if key.startswith("app:"):
                writes.setdefault(key, []).append(event)
    users = {t.session_id: t.user_id for t in trace.turns}
    for key, key_writes in writes.items():
        for snapshot in trace.persisted:
            if not any(w.user_id != snapshot.user_id and w.turn < snapshot.turn for w in key_writes):
                continue
            expected, last = _value_before(key_writes, key, snapshot.turn, inclusive=True)
            actual = snapshot.app_state.get(stored_name(key), _ABSENT)
            line = f"{name_snapshot(snapshot)} (user {snapshot.user_id}): app_state {stored_name(key)!r}"
            if actual == expected:
                checked.append(f"{line} holds what {name_event(last)} (user {last.user_id}) wrote")
            else:
                shown = "<absent>" if actual is _ABSENT else show(actual)
                problems.append(f"{line} is {shown}, but {name_event(last)} (user {last.user_id}) wrote "
                                f"{show(expected)}")

        # 3. ... and in their analyst prompts, for the keys the prompt shows (snippets may be cut by a budget).
        if key not in profile.prompt_app_keys or scenario.limits.context_budget_tokens is not None:
            continue
        for request in sorted(trace.requests_of(profile.analyst), key=lambda r: r.index):
            user = users.get(session_of_request(trace, request) or "")
            if user is None or not any(w.user_id != user and w.turn < request.turn for w in key_writes):
                continue
            value, last = _value_before(key_writes, key, request.turn, inclusive=False)
            text = request.system_instruction + "\n" + request.contents_text
            missing = [n for n in _needles(None if value is _ABSENT else value) if n not in text]
            if missing:
                problems.append(f"{name_request(request)} of user {user} does not show {key!r} item(s) "
                                f"{keys_list(missing)} saved by {name_event(last)} (user {last.user_id})")
            else:
                checked.append(f"{name_request(request)} of user {user} shows {key!r} as saved by {name_event(last)}")

    if not problems and not checked:
        return not_applicable(NAME, "No app: data was written by a session with a later session of another user "
                                    "(and no app tool wrote elsewhere).")
    if problems:
        return failed(NAME, f"{len(problems)} place(s) where app data was not shared with other users.",
                      capped(problems + checked))
    return passed(NAME, f"App data reached every later session of other users ({len(checked)} place(s) compared).",
                  capped(checked))
