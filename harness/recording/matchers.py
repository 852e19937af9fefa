"""vcrpy matchers: which recorded interaction answers a request.

``MATCH_ON`` is every cassette's list: the method compared case-insensitively (``method_ci``), then vcrpy's own
scheme, host, port, path and query. ``caller`` (added by the model session) keeps each model call with its caller.

vcrpy's default matching ignores bodies and replays same-URL calls in recorded
order. Every agent and Job_B's sub-LM post to the same URL, and concurrent
``llm_query_batched`` calls may arrive in any order, so order alone could hand
one caller another's answer. ``caller`` compares who is calling — the agent
named in the system instruction, or for a sub-LM call the prompt itself —
and nothing else, so prompt wording may still drift between recording and
replay. A ``countTokens`` call (the agent's prompt being measured) has no
identity line and its text holds fresh artifact ids, so its caller is
``count_tokens`` alone: those calls replay in recorded order.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from vcr.request import Request

from ..llm.fresh_values import mask_fresh_values
from ..llm.scripted_endpoint import agent_from_request
from ..scenario.script import SUB_LM

COUNT_TOKENS = "count_tokens"
MATCH_ON = ("method_ci", "scheme", "host", "port", "path", "query")


def method_ci(r1: Request, r2: Request) -> None:
    """vcrpy matcher: HTTP methods equal ignoring case (aiohttp records ``post``, httpx ``POST``)."""
    if r1.method.upper() != r2.method.upper():
        raise AssertionError(f"{r1.method} != {r2.method} (compared case-insensitively)")


def caller_of(request: Request) -> str:
    if request.path.endswith(":countTokens"):
        return COUNT_TOKENS
    body: Any = request.body
    if hasattr(body, "read") or not isinstance(body, (str, bytes, type(None))):
        return "unparseable-body"  # a streamed upload (Databricks Files API PUT): never a model call
    return _caller_of_body(body)


@functools.lru_cache(maxsize=256)
def _caller_of_body(body: str | bytes | None) -> str:
    """The caller a request body names. Cached: vcrpy matches each incoming request against every recorded one of
    the cassette, so the same recorded bodies (each a whole prompt) were parsed ~17 times per model call."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return "unparseable-body"
    if not isinstance(data, dict):
        return "unparseable-body"
    agent = agent_from_request(data)
    if agent != SUB_LM:
        return agent
    texts = [part.get("text", "") for content in data.get("contents") or [] if isinstance(content, dict)
             for part in content.get("parts") or [] if isinstance(part, dict)]
    return f"{SUB_LM}:{mask_fresh_values(' '.join(texts))}"


def caller(r1: Request, r2: Request) -> None:
    a, b = caller_of(r1), caller_of(r2)
    if a != b:
        raise AssertionError(f"caller {a[:80]!r} != {b[:80]!r}")
