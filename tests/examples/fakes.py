"""Fakes for running the example agent offline: a scripted BaseLlm and a fake Gemini HTTP server.

* ``FakeLlm`` answers each agent's n-th request with its n-th scripted text; the agent is named
  by ADK's identity line in the system instruction. Every request is kept.
* ``FakeGemini`` is a tiny ``generateContent`` server on 127.0.0.1 for the REPL worker's
  ``llm_query``: it answers each prompt with ``answer(prompt)`` (so concurrent calls cannot get
  each other's answers) after ``delay`` seconds, and counts the calls in flight at once.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, AsyncGenerator

from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.genai import types
from pydantic import PrivateAttr

_IDENTITY = re.compile(r'Your internal name is "([^"]+)"')


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in (getattr(content, "parts", None) or []) if getattr(p, "text", None))


@dataclass(frozen=True)
class SeenRequest:
    agent: str
    system_instruction: str
    contents: str


class FakeLlm(BaseLlm):
    model: str = "fake-gemini"
    _script: dict[str, list[str]] = PrivateAttr(default_factory=dict)
    _served: dict[str, int] = PrivateAttr(default_factory=lambda: defaultdict(int))
    _seen: list[SeenRequest] = PrivateAttr(default_factory=list)

    @classmethod
    def scripted(cls, script: Mapping[str, Sequence[str]]) -> FakeLlm:
        llm = cls()
        llm._script = {agent: list(texts) for agent, texts in script.items()}
        return llm

    def seen(self, agent: str) -> list[SeenRequest]:
        return [r for r in self._seen if r.agent == agent]

    def unserved(self) -> dict[str, int]:
        return {a: len(t) - self._served[a] for a, t in self._script.items() if len(t) > self._served[a]}

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        system = _text(llm_request.config.system_instruction if llm_request.config else None)
        match = _IDENTITY.search(system)
        agent = match.group(1) if match else "unknown"
        self._seen.append(SeenRequest(agent, system, "\n".join(_text(c) for c in llm_request.contents)))
        replies = self._script.get(agent, [])
        index = self._served[agent]
        if index >= len(replies):
            raise AssertionError(f"FakeLlm: {agent} made request #{index + 1}; the script has {len(replies)}")
        self._served[agent] = index + 1
        words = len(system.split()), len(replies[index].split())
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=words[0], candidates_token_count=words[1], total_token_count=sum(words))
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=replies[index])]),
                          usage_metadata=usage, turn_complete=True)


@dataclass
class FakeGemini:
    base_url: str
    prompts: list[str]
    max_in_flight: int = 0


@contextmanager
def fake_gemini(answer: Callable[[str], str], *, delay: float = 0.0) -> Iterator[FakeGemini]:
    """Serve ``generateContent`` on 127.0.0.1 until the block ends."""
    lock = threading.Lock()
    in_flight = 0
    server_box: dict[str, FakeGemini] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            nonlocal in_flight
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            prompt = "".join(part.get("text", "") for content in body.get("contents", [])
                             for part in content.get("parts", []))
            fake = server_box["fake"]
            with lock:
                fake.prompts.append(prompt)
                in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, in_flight)
            try:
                time.sleep(delay)
                if not self.path.endswith(":generateContent"):
                    self._send(404, {"error": {"code": 404, "message": self.path, "status": "NOT_FOUND"}})
                    return
                text = answer(prompt)
                self._send(200, {
                    "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": len(prompt.split()),
                                      "candidatesTokenCount": len(text.split()),
                                      "totalTokenCount": len(prompt.split()) + len(text.split())},
                })
            finally:
                with lock:
                    in_flight -= 1

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server_box["fake"] = fake = FakeGemini(base_url=f"http://127.0.0.1:{server.server_address[1]}", prompts=[])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
