"""``rlm-conformance capture STORE --session ID``: a stored session (a production incident) becomes a scenario
that replays its user turns with the model answers its events hold.

The store is read as ``audit`` reads it (any layout it knows, read-only). The session's events are turned back
into ADK ``Event`` objects and handed to ADK's own ``EvaluationGenerator.convert_events_to_eval_invocations`` —
the same conversion ``adk eval`` makes of a session — so the scenario comes out of the eval-set path
(``evalset.scenario_from_case``): the user's messages are the turns, each LlmAgent's answers its script. The
session's initial state is what its state holds that no event wrote. No expected state is written: the stored
state is the incident's, possibly the bug itself; the invariant checks judge the replay. Every string is
scrubbed as cassettes are (known keys of the environment and secret-looking values). What no stored session holds
— the sub-model's answers to code that calls ``llm_query`` — is named in a note, or taken from a file of answers
(``--sub-lm``, as ``import evalset`` takes it: harness/importers/sub_model.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from harness.recording.filters import scrub_value
from ..llm.modes import API_KEY_VARIABLES
from .evalset import AgentTree, scenario_from_case
from .sub_model import Answers, with_sub_model_answers

SECRET_VARIABLES = (*API_KEY_VARIABLES, "DATABRICKS_TOKEN", "DATABRICKS_CLIENT_SECRET")


class CaptureError(HarnessError):
    """No single session to capture, or one that cannot be scripted; the message says which and the fix."""


def find_session(store_spec: str, session_id: str, *, app: str | None = None, user: str | None = None) -> Any:
    """The one stored session with ``session_id`` (narrowed by ``app``/``user``), as ``audit`` reads it."""
    from ..audit.stores import SessionFilter, open_store

    problems: list[str] = []
    with open_store(store_spec) as store:
        found = list(store.sessions(SessionFilter(app=app, user=user, session=session_id),
                                    on_unreadable=lambda key, message: problems.append(message)))
        where = store.where
    if problems and not found:
        raise CaptureError(f"{where}: session {session_id!r} cannot be read: {problems[0]}")
    if not found:
        narrowed = "".join(f" {flag} {value}" for flag, value in (("--app", app), ("--user", user)) if value)
        raise CaptureError(f"{where}: no session {session_id!r}{narrowed}. Fix: list them with "
                           f"`rlm-conformance audit {store_spec}` and name one.")
    if len(found) > 1:
        keys = ", ".join(s.key for s in found)
        raise CaptureError(f"{where}: {len(found)} sessions have the id {session_id!r} ({keys}). Fix: add --app "
                           f"and --user to name one.")
    return found[0]


def _events(stored: Any) -> list[Any]:
    from google.adk.events import Event, EventActions
    from google.genai import types

    events = []
    for record in stored.events:
        content = types.Content.model_validate(record.content) if record.content else None
        events.append(Event(id=record.id, author=record.author or "user", invocation_id=record.invocation_id or "",
                            timestamp=record.timestamp or 0.0, content=content,
                            actions=EventActions(state_delta=dict(record.state_delta))))
    return events


def initial_state(stored: Any) -> dict[str, Any]:
    """What the session's state holds that no event wrote: what it was created with (``user:``/``app:`` keys
    included, as ADK's merged view names them)."""
    written = {key for event in stored.events for key in event.state_delta}
    merged = {**stored.state, **{f"app:{k}": v for k, v in (stored.app_state or {}).items()},
              **{f"user:{k}": v for k, v in (stored.user_state or {}).items()}}
    return {key: value for key, value in merged.items() if key not in written and not key.startswith("temp:")}


def scenario_from_session(stored: Any, tree: AgentTree, *, name: str, source: str, profile: str | None,
                          target: str | None = None, sub_lm: Answers | None = None,
                          sub_lm_file: Path | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The scenario replaying ``stored``, and its notes (the sub-model's answers its code needs: from ``sub_lm``,
    looked up by the scenario's name, the session's id, else the list for every case — or how to give them)."""
    from google.adk.evaluation.eval_case import EvalCase, SessionInput
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator

    from .evalset import CaseRefused, Refusal

    invocations = EvaluationGenerator.convert_events_to_eval_invocations(_events(stored))
    case = EvalCase(eval_id=stored.session_id, conversation=invocations,
                    session_input=SessionInput(app_name=stored.app_name, user_id=stored.user_id,
                                               state=initial_state(stored)))
    try:
        scenario = scenario_from_case(case, tree, source=source, name=name, exact_state=False, profile=profile,
                                      target=target)
    except CaseRefused as exc:
        raise CaptureError(str(Refusal(f"{source}: session {stored.key}", str(exc)))) from None
    scenario["description"] = f"Session {stored.key} captured from {source} ({len(stored.events)} events)."
    scenario.pop("expect", None)
    scenario["tags"] = ["captured"]
    scenario, notes = with_sub_model_answers(scenario, ids=(name, stored.session_id), answers=sub_lm,
                                             answers_file=sub_lm_file, held_by="no stored session")
    secrets = [os.environ[name] for name in SECRET_VARIABLES if os.environ.get(name)]
    return scrub_value(scenario, secrets=secrets), notes
