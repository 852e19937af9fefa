"""``RlmModelGuardPlugin``: a blocked model answer ends the turn, it is not retried.

ADK turns a SAFETY (or other block) finish reason into an event with an error
code and no content, and the LoopAgent would then ask the same model the same
thing again — blocked again — until max_iterations. A block is not transient,
so the guard ends the loop with that event (``escalate``), and
``run_conversation`` reports the turn as a clean ``model_error`` naming the
reason (``blocked_answer``); the session keeps what the turn did before.

The escalation is set twice, the same way on every ADK line: in ``after_model_callback`` (ADK 2.x binds a
plugin's callback context to the answer's event, so its actions are the event's) and again on the event itself
in ``on_event_callback``, which the Runner calls before it persists the event and before the LoopAgent reads
``escalate``. ADK 1.x (1.39.1) hands a plugin's ``after_model_callback`` a context of its own, whose actions
reach no event: without the second hook a block would be asked again on 1.x (see adk_compat's table).

It does not raise: an exception out of a plugin callback is what ADK treats as
a broken plugin — its plugin manager logs it as an ERROR with a traceback and
re-raises it wrapped in "Error in plugin ..." — while a block is an answer of the
model, handled here.
"""

from __future__ import annotations

from typing import Optional

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin

BLOCKING_REASONS = frozenset({"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION",
                              "IMAGE_SAFETY", "MODEL_ARMOR"})


class ModelAnswerBlocked(RuntimeError):
    """The model refused to answer (a block finish reason); retrying would be refused the same way."""


def blocked_reason(code: object, reason: object) -> str | None:
    """The block among an answer's error code and finish reason (enum or text), or None."""
    names = (getattr(value, "name", value) for value in (code, reason))
    return next((str(name) for name in names if name and str(name) in BLOCKING_REASONS), None)


def blocked_answer(event: Event) -> ModelAnswerBlocked | None:
    """What ended the turn when ``event`` is a blocked model answer (the guard's escalation), else None."""
    blocked = blocked_reason(event.error_code, event.finish_reason)
    if blocked is None or event.author is None:
        return None
    return ModelAnswerBlocked(f"the model's answer to {event.author} was blocked (finish reason {blocked}); the "
                              f"turn ends instead of asking again")


class RlmModelGuardPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__(name="rlm_model_guard")

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> Optional[LlmResponse]:
        if blocked_reason(llm_response.error_code, llm_response.finish_reason):
            callback_context.actions.escalate = True  # the loop stops after this (blocked) answer's event
        return None

    async def on_event_callback(self, *, invocation_context: InvocationContext, event: Event) -> Optional[Event]:
        if blocked_reason(event.error_code, event.finish_reason):
            event.actions.escalate = True  # in place: the LoopAgent holds this very event
        return None
