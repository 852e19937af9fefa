"""A scripted answer's delay, recorded in the cassette and waited for again on replay.

vcrpy answers from the cassette at once, so replay alone cannot tell concurrent sub-LM calls from calls made one
after another. A scripted step with ``delay:`` is answered late by the scripted endpoint, which says so in a
response header (``X-Rlm-Scripted-Delay``); the header is recorded with the response. On replay, each sub-LM
call runs with a box in a context variable; the cassette's ``play_response`` (wrapped here) drops the
recorded delay in it, and the call waits that long once it has its answer — concurrently for concurrent calls,
so ``llm_query_batched`` takes about its slowest answer on replay too, and its sum when the calls queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any, TypeVar

DELAY_HEADER = "X-Rlm-Scripted-Delay"
T = TypeVar("T")

_BOX: ContextVar[list[float] | None] = ContextVar("rlm_replay_delay", default=None)


def _recorded_delay(response: Any) -> float:
    headers = (response or {}).get("headers") or {} if isinstance(response, dict) else {}
    for name, values in headers.items():
        if str(name).lower() == DELAY_HEADER.lower():
            value = values[0] if isinstance(values, list) and values else values
            try:
                return float(value)
            except (TypeError, ValueError):
                return 0.0
    return 0.0


def replay_recorded_delays(cassette: Any) -> None:
    """Make ``cassette`` hand each played response's recorded delay to the call waiting for it."""
    original = cassette.play_response

    def play_response(request: Any) -> Any:
        response = original(request)
        box = _BOX.get()
        if box is not None and (delay := _recorded_delay(response)) > 0:
            box.append(delay)
        return response

    cassette.play_response = play_response


async def with_recorded_delay(call: Awaitable[T]) -> T:
    """Await ``call``, then wait as long as the model took to answer it when it was recorded."""
    box: list[float] = []
    token = _BOX.set(box)
    try:
        result = await call
    finally:
        _BOX.reset(token)
    if box:
        await asyncio.sleep(sum(box))
    return result
