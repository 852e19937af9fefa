"""The LM bridge of Job_B's supervisor on Databricks: ``llm_query`` answered where the key is, not where the code is.

The analyst's code runs in the supervisor's child with ``--lm-address`` pointing
here, exactly as a local Job_B reaches the host's ``LmBridge``: the same wire format
(``lm_client.py``: one JSON object per line, ``{"id", "prompts"}`` in,
``{"id", "responses", "tokens"}`` or ``{"id", "error"}`` out), the same per-run call
cap and token budget enforced on this side too (the code could talk to the socket
without its client's checks), the same error texts. The model is called by
``GeminiAnswers`` with the key only this process holds (``credential.py``).

A threaded server on 127.0.0.1 (a free port; the child's confinement lets it connect
to that port only). A connection's requests are answered in order; the child's client
sends one at a time. Standard library only: part of Job_B's payload.
"""

from __future__ import annotations

import json
import socketserver
import threading
import time
from typing import Any

from .direct_lm import GeminiAnswers
from .lm_client import SubLmError, record_calls

_LINE_LIMIT = 64 * 1024 * 1024  # a batch of large prompts is one line


class ModelBridge:
    """Serves ``answers`` on 127.0.0.1 until ``close()``; ``calls`` is the host-side view of every call."""

    def __init__(self, answers: GeminiAnswers, *, max_calls: int) -> None:
        self.answers = answers
        self._max_calls = max_calls
        self._used = 0
        self._requests = 0
        self._lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []  # for the result the supervisor writes when the child wrote none
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.bridge = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="rlm-model-bridge", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(2.0)

    def reply(self, line: bytes) -> dict[str, Any]:
        """The reply to one request line."""
        try:
            message = json.loads(line)
        except ValueError as exc:
            return {"id": None, "error": f"bad request: {exc}"}
        request_id = message.get("id") if isinstance(message, dict) else None
        prompts = message.get("prompts") if isinstance(message, dict) else None
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            return {"id": request_id, "error": "bad request: request needs 'prompts': a list of strings"}
        with self._lock:  # one request at a time, as the child's client sends them
            if self._used + len(prompts) > self._max_calls:
                return {"id": request_id, "error": f"sub-LM budget exceeded: at most {self._max_calls} sub-LM "
                                                   "calls per run"}
            self._used += len(prompts)
            self._requests += 1
            started = time.perf_counter()
            responses: list[str] = []
            tokens: list[Any] = []
            error = None
            try:
                responses, tokens = self.answers.answer(prompts)
            except SubLmError as exc:
                error = str(exc)
            record_calls(self.calls, prompts, responses, tokens, request_id=self._requests, batched=len(prompts) > 1,
                         latency_s=round(time.perf_counter() - started, 6), error=error)
        if error is not None:
            return {"id": request_id, "error": error}
        return {"id": request_id, "responses": responses, "tokens": tokens}


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = False
    bridge: ModelBridge


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            try:
                line = self.rfile.readline(_LINE_LIMIT)
            except OSError:
                return
            if not line:
                return
            reply = self.server.bridge.reply(line)
            try:
                self.wfile.write(json.dumps(reply).encode("utf-8") + b"\n")
                self.wfile.flush()
            except OSError:
                return
