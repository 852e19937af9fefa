"""The model gateway: how a user's own model calls reach the run's model, wherever they are made.

A target the harness builds from an App or an agent gets the run's model under every ``LlmAgent``
directly. What that cannot reach — a ``google.genai.Client()`` the agent creates itself, in-process or in
a subprocess such as a REPL worker's ``llm_query`` — finds the model through the two environment variables
google-genai reads: ``GOOGLE_GEMINI_BASE_URL`` points at this gateway on 127.0.0.1 and ``GOOGLE_API_KEY``
holds a key for the mode (a dummy offline). The gateway forwards each request, unchanged, through an
in-process HTTP client to the mode's model: the scripted endpoint, or Gemini's own host, where vcrpy
answers from the cassette (replay) or records (live). So those calls are replayed, recorded, scrubbed and
judged exactly like the agents' own, and replay stays offline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import HarnessError
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
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._port: int | None = None
        self._error: BaseException | None = None
        self.forwarded = 0

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise HarnessError("ModelGateway.base_url is only known while the gateway runs.")
        return f"http://127.0.0.1:{self._port}"

    def __enter__(self) -> ModelGateway:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="model-gateway", daemon=True)
        self._thread.start()
        ready.wait()
        if self._error is not None:
            raise HarnessError(f"The model gateway could not listen on 127.0.0.1: {self._error!r}") from self._error
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._thread = self._loop = self._port = None

    def _serve(self, ready: threading.Event) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self._port, self._loop = runner.addresses[0][1], loop
        except BaseException as exc:  # re-raised in the caller's thread by __enter__
            self._error = exc
            loop.close()
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

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
    saved = {name: os.environ.get(name) for name in (BASE_URL_VARIABLE, API_KEY_VARIABLE, "GEMINI_API_KEY")}
    os.environ[BASE_URL_VARIABLE] = gateway.base_url
    os.environ[API_KEY_VARIABLE] = "rlm-gateway-key"  # the gateway sets the real one upstream
    os.environ.pop("GEMINI_API_KEY", None)  # google-genai prefers GOOGLE_API_KEY; keep one source
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
