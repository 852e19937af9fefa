"""``run_conversation``: one user turn through the Runner, with an outcome read from storage.

Stale flags of the previous turn are cleared by *appending a cleanup event*
(never by mutating a fetched session, which would not be persisted). The
outcome is computed from the persisted session, not from ``temp:`` flags in
yielded events — ADK has already stripped those, so such a runner always says
"success".

At the end of every turn the user's history (``user:rlm:history``) gets one
entry — question, termination, answer, the turn's artifacts from
``temp:rlm:turn_log`` — through one more appended event (see ``history``).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import Session
from google.genai import types

from . import history
from . import state_contract as keys
from .config import AgentSettings
from .plugins.model_guard import ModelAnswerBlocked, blocked_answer
from .plugins.turn_log import turn_log_plugin

logger = logging.getLogger(__name__)

Termination = Literal["final_answer", "exit_loop", "max_iterations", "fatal_error", "model_error", "agent_error"]

# Flags of a finished turn that must not leak into the next one.
STALE_TURN_KEYS = (keys.EXIT_REQUESTED, keys.FATAL_ERROR, keys.FATAL_ERROR_MSG, keys.FINAL_ANSWER,
                   keys.TERMINATION_REASON, keys.FORCED_ANSWER)

ANSWER_NOW = ("You have used every iteration without giving a final answer. Answer the user's question now, in "
              "plain text, with the best answer the results so far support. Do not call tools or write code.")


@dataclass(frozen=True)
class RunOutcome:
    session_id: str
    termination: Termination
    final_answer: str | None
    delegations: int
    error: str | None = None
    # Max iterations only: the analyst's best-effort answer to one last "answer now" request.
    forced_answer: str | None = None
    # The exception that ended the turn, for callers that attribute it (the conformance harness does).
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.termination in ("final_answer", "exit_loop")


async def _append(runner: Runner, session: Session, delta: dict, label: str) -> None:
    event = Event(
        invocation_id=f"{label}-{uuid.uuid4().hex[:8]}",
        author=keys.RUN_CONVERSATION,
        actions=EventActions(state_delta=delta),
        timestamp=time.time(),
    )
    await runner.session_service.append_event(session, event)


async def ensure_session(runner: Runner, *, user_id: str, session_id: str) -> Session:
    service = runner.session_service
    session = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    if session is None:
        session = await service.create_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    return session


async def run_conversation(runner: Runner, *, user_id: str, session_id: str, message: str) -> RunOutcome:
    service = runner.session_service
    session = await ensure_session(runner, user_id=user_id, session_id=session_id)
    stale = {key: None for key in STALE_TURN_KEYS if key in session.state}
    if stale:
        await _append(runner, session, stale, "cleanup")
    iteration_before = int(session.state.get(keys.ITERATION, 0))
    summary_before = session.state.get(keys.LAST_RESULTS_SUMMARY)

    error: str | None = None
    failure: BaseException | None = None
    blocked: ModelAnswerBlocked | None = None  # a blocked model answer, on which the guard ended the loop
    analyst_text: str | None = None
    try:
        async for event in runner.run_async(
            user_id=user_id,
            session_id=session_id,
            new_message=types.Content(role="user", parts=[types.Part.from_text(text=message)]),
        ):
            if event.author == keys.ANALYST and event.content and event.content.parts and not event.partial:
                text = "".join(p.text for p in event.content.parts if p.text and not p.thought).strip()
                analyst_text = text or analyst_text
            if not event.partial and (answer := blocked_answer(event)) is not None:
                blocked = answer
    except Exception as exc:  # a model or infrastructure failure ends the turn cleanly; the session stays
        logger.warning("turn failed: %s: %s", type(exc).__name__, exc, exc_info=True)
        # Some errors (a client timeout) carry no message: name what happened rather than print "TimeoutError: ".
        error = f"{type(exc).__name__}: {str(exc) or 'no message (the model request timed out or was cut off)'}"
        failure = exc

    stored = await service.get_session(app_name=runner.app_name, user_id=user_id, session_id=session_id)
    assert stored is not None, "the session vanished during the turn"
    reason = stored.state.get(keys.TERMINATION_REASON)
    if failure is None and blocked is not None:
        error = f"{type(blocked).__name__}: {blocked}"
    if (ended_by := failure or blocked) is not None:
        reason = termination_for(ended_by)
        await _append(runner, stored, {keys.TERMINATION_REASON: reason, keys.FATAL_ERROR: True,
                                       keys.FATAL_ERROR_MSG: error[:2000]}, "outcome")
    elif reason is None:
        # The loop ran out without FINAL or exit_loop: no final answer. As the RLM reference does, ask the
        # analyst's model once more to answer now, and keep that apart from a real final answer.
        reason = "max_iterations"
        forced, problem = await _answer_now(runner, stored, message)
        delta: dict = {keys.TERMINATION_REASON: reason}
        if forced is not None:
            delta[keys.FORCED_ANSWER] = forced
        await _append(runner, stored, delta, "outcome")
        error = problem
    # No re-read below: append_event applies each delta to ``stored`` itself, as the base service does.
    await _fold_history(runner, stored, question=message, termination=reason, analyst_text=analyst_text,
                        summary_before=summary_before)
    return RunOutcome(
        session_id=session_id,
        termination=reason,
        final_answer=stored.state.get(keys.FINAL_ANSWER),
        delegations=int(stored.state.get(keys.ITERATION, 0)) - iteration_before,
        error=error,
        forced_answer=stored.state.get(keys.FORCED_ANSWER),
        exception=failure,
    )


def termination_for(exc: BaseException) -> Termination:
    """``model_error`` when the model failed (an API error, a timeout, a body that does not parse, a blocked
    answer), ``agent_error`` for anything else: a plugin, tool, agent or the session service raised."""
    from google.genai import errors as genai_errors

    from .plugins.model_guard import ModelAnswerBlocked

    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    for link in seen:
        if isinstance(link, (genai_errors.APIError, ModelAnswerBlocked, TimeoutError)):
            return "model_error"
        tb = link.__traceback__
        while tb is not None:
            if tb.tb_frame.f_globals.get("__name__", "").startswith("google.genai"):
                return "model_error"  # raised while the model client sent the request or read the answer
            tb = tb.tb_next
    return "agent_error"


async def _fold_history(runner: Runner, session: Session, *, question: str, termination: str,
                        analyst_text: str | None, summary_before: str | None) -> None:
    """Append this turn to ``user:rlm:history`` with one event: the only writer of that key."""
    state = session.state
    summary = state.get(keys.LAST_RESULTS_SUMMARY)
    answer = (state.get(keys.FINAL_ANSWER) or state.get(keys.FORCED_ANSWER) or analyst_text
              or (summary if summary != summary_before else None))
    plugin = turn_log_plugin(runner)
    turn_log = plugin.take(app_name=runner.app_name, user_id=session.user_id, session_id=session.id) if plugin else []
    limit = plugin.history_max_entries if plugin else AgentSettings.history_max_entries
    entry = history.history_entry(session_id=session.id, question=question, termination=termination, answer=answer,
                                  turn_log=turn_log)
    await _append(runner, session, {keys.USER_HISTORY: history.fold_turn(state.get(keys.USER_HISTORY), entry,
                                                                         max_entries=limit)}, "history")


async def _answer_now(runner: Runner, session: Session, question: str) -> tuple[str | None, str | None]:
    """One last request to the analyst's model; returns (answer, error)."""
    from google.adk.models.llm_request import LlmRequest

    analyst = runner.agent.find_agent(keys.ANALYST)
    model = getattr(analyst, "canonical_model", None)
    if model is None:
        return None, None
    summary = session.state.get(keys.LAST_RESULTS_SUMMARY) or "(no results yet)"
    request = LlmRequest(
        model=model.model,
        contents=[types.Content(role="user", parts=[types.Part.from_text(
            text=f"Question: {question}\n\nLatest results summary:\n{summary}\n\n{ANSWER_NOW}")])],
        config=types.GenerateContentConfig(
            # The identity line ADK itself adds, so the request is attributed to the analyst.
            system_instruction=f'You are an agent. Your internal name is "{keys.ANALYST}".'),
    )
    try:
        text = ""
        async for response in model.generate_content_async(request):
            if response.content and response.content.parts and not response.partial:
                text = "".join(p.text for p in response.content.parts if p.text and not p.thought)
        return text.strip() or None, None
    except Exception as exc:  # the forced answer is best effort; the outcome stays max_iterations
        logger.warning("answer-now request failed: %s", exc)
        return None, f"answer-now request failed: {type(exc).__name__}: {exc}"
