"""The sub-LM that answers Job_B's ``llm_query`` calls, built on a google-genai client.

The caller creates the client (API key, base URL, vcrpy cassette around it), so
this module never reaches the network by itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .jobs import SubLm, SubLmAnswer

if TYPE_CHECKING:  # google.genai is heavy; only type checkers need it here
    from google.genai import Client


def sublm_from_genai(client: "Client | Any", model: str) -> SubLm:
    """A ``SubLm`` that sends each prompt as one ``generate_content`` call; empty text for no text."""

    async def sub_lm(prompt: str) -> str:
        response = await client.aio.models.generate_content(model=model, contents=prompt)
        usage = getattr(response, "usage_metadata", None)
        return SubLmAnswer(response.text or "", tokens=getattr(usage, "total_token_count", None))

    return sub_lm


def lazy_genai_sub_lm(model: str, *, base_url: str | None = None) -> SubLm:
    """A ``SubLm`` whose google-genai client is created on the first call.

    For ``adk run`` / ``adk web``: importing the agent must not need an API key;
    the first ``llm_query`` does (``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``).
    """
    client: Any = None

    async def sub_lm(prompt: str) -> str:
        nonlocal client
        if client is None:
            from google.genai import Client, types

            client = Client(http_options=types.HttpOptions(base_url=base_url) if base_url else None)
        return await sublm_from_genai(client, model)(prompt)

    return sub_lm
