"""The run's sub-LM and token counter on a google-genai client (the client of the run's LLM mode).

The caller gives the client (API key, base URL, the cassette around it) as a function that builds it, called at
the first call: most scenarios make no sub-LM or countTokens call, and a client takes a few milliseconds to
build. Nothing here reaches the network by itself. A target's Job_B gets ``sub_lm``; the target's context
assembly gets ``count_tokens``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # google.genai is heavy; only type checkers need it here
    from google.genai import Client

__all__ = ["SubLmAnswer", "genai_sub_lm", "genai_token_counter"]


class SubLmAnswer(str):
    """A sub-LM answer that also carries the tokens the model reported for the call (prompt + answer).

    A target that budgets sub-LM tokens reads ``getattr(answer, "tokens", None)``; to anything else it is a str.
    """

    tokens: int | None

    def __new__(cls, text: str, *, tokens: int | None = None) -> SubLmAnswer:
        answer = super().__new__(cls, text)
        answer.tokens = tokens
        return answer


def genai_sub_lm(client: Callable[[], Client | Any], model: str) -> Callable[[str], Awaitable[str]]:
    """Each prompt as one ``generate_content`` call; empty text for an answer without text."""

    async def sub_lm(prompt: str) -> str:
        response = await client().aio.models.generate_content(model=model, contents=prompt)
        usage = getattr(response, "usage_metadata", None)
        return SubLmAnswer(response.text or "", tokens=getattr(usage, "total_token_count", None))

    return sub_lm


def genai_token_counter(client: Callable[[], Client | Any], model: str) -> Callable[[str], Awaitable[int]]:
    """``await count(text)``: the tokens of ``text`` from ``models/{model}:countTokens``."""

    async def count_tokens(text: str) -> int:
        response = await client().aio.models.count_tokens(model=model, contents=text)
        return int(response.total_tokens or 0)

    return count_tokens
