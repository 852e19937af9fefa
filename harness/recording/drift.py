"""Cassette drift: a replayed model call whose request is no longer the one that was recorded.

The ``rlm_caller`` matcher pairs a call with its recording by caller alone (which agent, or which
sub-LM prompt), so a call whose prompt, tools or settings changed since recording still finds a
recorded answer: the answer to another request. Replay would then pass on evidence that no longer
describes the agent. So after each played model call the request sent is compared with the one
recorded. Values every run makes afresh (UUIDs, hex ids, temporary paths) are masked on both sides;
what is left must be equal, once both are written in the form ADK 1.x and 2.x encode alike
(``adk_compat.canonical_model_request``: a cassette recorded on one ADK line replays on the other). Only model calls are compared: a Databricks REST call carries
timestamps and row ids by nature, and its recorded answers are matched by their own rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from adk_compat import canonical_model_request

from ..llm.fresh_values import mask_fresh_values
from .matchers import caller_of

_CONTEXT_CHARS = 70


def is_model_call(path: str) -> bool:
    return "/models/" in path


def normalized_body(body: Any) -> str:
    """The request body as text, in the ADK lines' common form, with the run's fresh values masked."""
    if body is None:
        return ""
    text = body.decode("utf-8", errors="replace") if isinstance(body, (bytes, bytearray)) else str(body)
    return mask_fresh_values(canonical_model_request(text))


@dataclass(frozen=True)
class Drift:
    """One played model call whose request differs from its recording."""

    interaction: int  # index of the recorded interaction in the cassette
    caller: str
    recorded: str  # an excerpt around the first difference, fresh values masked
    sent: str

    def describe(self) -> str:
        return (f"interaction #{self.interaction} ({self.caller[:60]!r}): recorded ...{self.recorded}... "
                f"but sent ...{self.sent}...")


def first_difference(recorded: str, sent: str) -> tuple[str, str]:
    """Excerpts of both texts around the first character where they part."""
    at = next((i for i, (a, b) in enumerate(zip(recorded, sent)) if a != b), min(len(recorded), len(sent)))
    start = max(0, at - _CONTEXT_CHARS // 2)
    return recorded[start:at + _CONTEXT_CHARS], sent[start:at + _CONTEXT_CHARS]


def watch_drift(cassette: Any, on_drift: Callable[[Drift], None]) -> None:
    """Compare every model request vcrpy plays from ``cassette`` with the recorded one it was paired with."""
    original = cassette.play_response

    def play_response(request: Any) -> Any:
        counts = dict(cassette.play_counts)
        response = original(request)  # raises when nothing matches: a miss, reported elsewhere
        played = [i for i, n in cassette.play_counts.items() if counts.get(i, 0) != n]
        if played:
            recorded_request = cassette.data[played[0]][0]
            # As vcrpy matched it: after the cassette's before_record_request (loopback rewrite, scrubbing).
            sent_request = cassette._before_record_request(request)
            # Equal bodies (half the calls of the suite: the ids are seeded by the scenario's name) need no
            # normalizing, which parses, re-encodes and masks both.
            if sent_request is not None and is_model_call(recorded_request.path) \
                    and recorded_request.body != sent_request.body:
                recorded, sent = normalized_body(recorded_request.body), normalized_body(sent_request.body)
                if recorded != sent:
                    on_drift(Drift(played[0], caller_of(sent_request), *first_difference(recorded, sent)))
        return response

    cassette.play_response = play_response
