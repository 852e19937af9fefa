"""The model script: what each agent's model (and Job_B's sub-LM) answers, in order.

A scenario's ``script`` maps an agent name (``databricks_analyst``,
``results_processor``, ... or ``sub_lm`` for ``llm_query`` calls made by executed
code) to a list of steps. The scripted endpoint serves call *n* of an agent with
step *n*; a fault step answers with an HTTP error or a broken body instead, and
the retry that follows takes the next step.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

SUB_LM = "sub_lm"
"""Script key for Job_B's ``llm_query`` / ``llm_query_batched`` calls."""


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextStep(_Step):
    """The model answers with text (and finishes with STOP)."""

    text: str = Field(description="The text the model answers with.")
    delay: float = Field(default=0.0, ge=0, le=30,
                         description="Seconds the model takes to answer (scripted mode waits; replay waits the "
                                     "recorded time), e.g. to show that llm_query_batched answers concurrently.")
    when: str | None = Field(
        default=None, min_length=1,
        description="Serve this step to the request whose prompt contains this text, whatever its position: for "
                    "concurrent calls (llm_query_batched), whose arrival order is not fixed. Steps without 'when' "
                    "are served in order to the other requests.")


class CallStep(_Step):
    """The model answers with one function call (optionally with text beside it)."""

    call: str = Field(description="Name of the tool the model calls, e.g. delegate_code_results.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments of the call.")
    text: str | None = Field(default=None, description="Optional text part before the call.")
    delay: float = Field(default=0.0, ge=0, le=30,
                         description="Seconds the model takes to answer (scripted mode waits; replay waits the "
                                     "recorded time).")


FaultKind = Literal["http_429", "http_500", "http_503", "malformed", "truncated", "slow", "empty", "safety"]


class FaultStep(_Step):
    """The endpoint misbehaves for this call instead of answering."""

    fault: FaultKind = Field(description="What goes wrong: an HTTP status, a broken body, a slow answer, "
                                         "no candidates, or a SAFETY finish reason.")
    retry_after: float | None = Field(default=None, description="Retry-After seconds sent with http_429.")
    delay: float = Field(default=0.0, description="Seconds to wait before answering (for 'slow').")


class ResponseStep(_Step):
    """The model answers with this GenerateContentResponse, verbatim: an answer recorded elsewhere (ADK's
    conformance recordings), usage metadata, finish reason and model version included."""

    response: dict[str, Any] = Field(description="The Gemini API's GenerateContentResponse JSON (camelCase), "
                                                 "returned as is.")


ModelStep = Union[CallStep, FaultStep, ResponseStep, TextStep]
