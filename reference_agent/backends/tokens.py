"""Token counting with the model's own tokenizer: google-genai's ``count_tokens`` endpoint.

A ``TokenCounter`` is ``async (text) -> int``. The caller creates the client (API
key, base URL, a vcrpy cassette around it), so a count is a model call like any
other: recorded, replayed, never estimated (no ``len(text) // 4``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

if TYPE_CHECKING:  # google.genai is heavy; only type checkers need it here
    from google.genai import Client

TokenCounter = Callable[[str], Awaitable[int]]
"""``await count(text)`` -> tokens of ``text`` as the model counts them."""


def genai_token_counter(client: "Client | Any", model: str) -> TokenCounter:
    """A ``TokenCounter`` that sends ``text`` to ``models/{model}:countTokens``."""

    async def count_tokens(text: str) -> int:
        response = await client.aio.models.count_tokens(model=model, contents=text)
        return int(response.total_tokens or 0)

    return count_tokens


def lazy_genai_token_counter(model: str, *, base_url: str | None = None) -> TokenCounter:
    """A ``TokenCounter`` whose google-genai client is created on the first count (see ``lazy_genai_sub_lm``)."""
    client: Any = None

    async def count_tokens(text: str) -> int:
        nonlocal client
        if client is None:
            from google.genai import Client, types

            client = Client(http_options=types.HttpOptions(base_url=base_url) if base_url else None)
        return await genai_token_counter(client, model)(text)

    return count_tokens
