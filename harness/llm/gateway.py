"""The model gateway: how a user's own model calls reach the run's model, wherever they are made.

A target the harness builds from an App or an agent gets the run's model under every ``LlmAgent``
directly. What that cannot reach — a ``google.genai.Client()`` the agent creates itself, in-process or in
a subprocess such as a REPL worker's ``llm_query`` — finds the model through the two environment variables
google-genai reads: ``GOOGLE_GEMINI_BASE_URL`` points at this gateway on 127.0.0.1 and ``GOOGLE_API_KEY``
holds a key for the mode (a dummy offline). The gateway forwards each request, unchanged, through an
in-process HTTP client to the mode's model: the scripted endpoint, or Gemini's own host, where vcrpy
answers from the cassette (replay) or records (live). So those calls are replayed, recorded, scrubbed and
judged exactly like the agents' own, and replay stays offline. The forwarded request is the one in the cassette:
an in-process client's call *to* the gateway passes the cassette by (``LlmSession.forwarding_gateway``), or vcrpy,
which patches that client too, would hold the call twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from ..environ import patched_environ
from ..errors import HarnessError
from .loopback import LoopbackServer
from .replay_delays import with_recorded_delay

GEMINI_ORIGIN = "https://generativelanguage.googleapis.com"
BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"
API_KEY_VARIABLE = "GOOGLE_API_KEY"
# Hop-by-hop and recomputed headers are not forwarded; the key is the gateway's to set.
_DROPPED_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "x-goog-api-key", "accept-encoding"}


class ModelGateway:
    """Forward Gemini API calls from 127.0.0.1 to ``upstream`` (a base URL) with ``api_key``."""

    def __init__(self, *, upstream: str | None, api_key: str, replay: bool = False) -> None:
        self._upstream = (upstream or GEMINI_ORIGIN).rstrip("/")
        self._api_key = api_key
        self._replay = replay
        self._server = LoopbackServer(lambda app: app.router.add_route("*", "/{tail:.*}", self._handle),
                                      name="model-gateway", client_max_size=64 * 1024 * 1024)
        self.forwarded = 0

    @property
    def base_url(self) -> str:
        if self._server.port is None:
            raise HarnessError("ModelGateway.base_url is only known while the gateway runs.")
        return f"http://127.0.0.1:{self._server.port}"

    def __enter__(self) -> ModelGateway:
        try:
            self._server.start()
        except BaseException as exc:
            raise HarnessError(f"The model gateway could not listen on 127.0.0.1: {exc!r}") from exc
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED_HEADERS}
        headers["x-goog-api-key"] = self._api_key
        url = self._upstream + request.rel_url.path_qs
        call = asyncio.to_thread(self._forward, request.method, url, headers, body)
        try:  # replay: answer as late as the recorded answer came, like the harness's own sub-LM calls
            status, reply_headers, content = await (with_recorded_delay(call) if self._replay else call)
        except Exception as exc:  # e.g. a call the cassette does not hold: the caller sees an API error
            return web.json_response({"error": {"code": 502, "status": "UNAVAILABLE",
                                                "message": f"rlm-conformance model gateway: {exc}"}}, status=502)
        self.forwarded += 1
        return web.Response(status=status, body=content, headers=reply_headers)

    @staticmethod
    def _forward(method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        import httpx  # vcrpy patches httpx: the forwarded call is replayed or recorded like any other

        with httpx.Client(timeout=httpx.Timeout(120.0)) as client:
            reply = client.request(method, url, headers=headers, content=body)
        kept = {k: v for k, v in reply.headers.items() if k.lower() in ("content-type",)}
        return reply.status_code, kept, reply.content


@contextlib.contextmanager
def routed_model_environment(gateway: ModelGateway) -> Iterator[None]:
    """Point google-genai clients created from the environment at ``gateway`` while the target runs."""
    # GEMINI_API_KEY unset: google-genai prefers GOOGLE_API_KEY, and one source of the key is clearer.
    with patched_environ({BASE_URL_VARIABLE: gateway.base_url, API_KEY_VARIABLE: "rlm-gateway-key",
                          "GEMINI_API_KEY": None}):  # the gateway sets the mode's real key upstream
        yield
