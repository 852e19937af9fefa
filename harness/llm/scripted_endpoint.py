"""A local Gemini-API-compatible HTTP server that answers from a scenario's model script.

``ScriptedEndpoint`` listens on ``127.0.0.1`` (an ephemeral port) in a background
thread with its own event loop. Point ADK's ``Gemini(base_url=endpoint.base_url)``
or ``genai.Client(http_options=HttpOptions(base_url=endpoint.base_url))`` at it.

Served routes (the Gemini Developer API shapes, any API version):

* ``POST /{version}/models/{model}:generateContent`` -- what ADK's ``Gemini`` calls
  in its default (non-streaming) mode;
* ``POST /{version}/models/{model}:streamGenerateContent`` -- ADK with
  ``StreamingMode.SSE``; with ``alt=sse`` the whole answer is one SSE event,
  without it a JSON array of one response;
* ``POST /{version}/models/{model}:countTokens`` -- a *scripted stand-in*: it
  counts whitespace-separated words of every ``text`` in the request, not
  Gemini tokens. ``usageMetadata`` in answers uses the same count.

Which agent is calling: ADK adds ``You are an agent. Your internal name is "NAME".``
to the system instruction; a request without it is a sub-LM call (``SUB_LM``).
Call *n* (counted from 0) of an agent is answered with step *n* of its script.

Faults (``FaultStep``) consume their step, so the client's retry gets the next:

* ``http_429`` / ``http_500`` / ``http_503``: Google-shaped JSON error
  ``{"error": {"code", "message", "status"}}``; 429 carries ``Retry-After``
  (``retry_after`` seconds, default 1);
* ``malformed``: 200 with a body that is not JSON; ``truncated``: 200 with a
  text answer's JSON cut in half;
* ``slow``: waits ``delay`` seconds, then answers the text ``SLOW_ANSWER_TEXT``
  (a client whose timeout is shorter gives up first; google-genai over aiohttp does
  not retry a timeout, so the call fails; a client that does retry gets the next step);
* ``empty``: 200 with no ``candidates``; ``safety``: one candidate with
  ``finishReason: SAFETY`` and no content.

A call past the end of an agent's script gets HTTP 400 (``FAILED_PRECONDITION``)
naming the agent and the call index. Every generate call, answered or not, is
logged in ``calls``; ``countTokens`` calls consume no step and are not logged.
A request the endpoint cannot serve at all (an unknown route, a body that is not
JSON) is logged in ``refused``. ``harness/run/script_fit.py`` reads both, and
``unserved()``, to tell whether a run followed its script.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ScriptedEndpointError
from harness.llm.loopback import LoopbackServer
from harness.llm.replay_delays import DELAY_HEADER
from harness.scenario.script import SUB_LM, CallStep, FaultStep, ModelStep, ResponseStep, TextStep

AgentResolver = Callable[[Mapping[str, Any]], str]

SLOW_ANSWER_TEXT = "scripted slow answer"
"""Text of the answer a ``slow`` fault gives after its delay."""

_IDENTITY = re.compile(r'You are an agent\. Your internal name is "([^"]+)"\.')
_ACTIONS = ("generateContent", "streamGenerateContent", "countTokens")
_HTTP_FAULTS = {
    "http_429": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "http_500": (500, "INTERNAL", "An internal error has occurred. Please retry."),
    "http_503": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
}


@dataclass(frozen=True)
class ServedCall:
    """One generate call the endpoint received; ``step`` is None when the script was exhausted."""

    agent: str
    index: int
    step: ModelStep | None
    request_json: Mapping[str, Any]
    model: str = ""
    action: str = "generateContent"


def agent_from_request(request_json: Mapping[str, Any]) -> str:
    """The agent name ADK put in the system instruction, or ``SUB_LM`` when there is none."""
    system = request_json.get("systemInstruction") or request_json.get("system_instruction")
    for text in _texts(system):
        match = _IDENTITY.search(text)
        if match:
            return match.group(1)
    return SUB_LM


def count_tokens(value: Any) -> int:
    """Scripted stand-in for a tokenizer: whitespace-separated words of every ``text`` in ``value``."""
    return sum(len(text.split()) for text in _texts(value))


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):  # only the values of "text" fields, at any depth
        found = [value["text"]] if isinstance(value.get("text"), str) else []
        return found + [t for v in value.values() if not isinstance(v, str) for t in _texts(v)]
    if isinstance(value, Sequence):
        return [t for item in value for t in _texts(item)]
    return []


def google_error(code: int, status: str, message: str) -> dict[str, Any]:
    """The JSON error body shape of Google APIs."""
    return {"error": {"code": code, "message": message, "status": status}}


def answer_json(step: TextStep | CallStep, *, model: str, agent: str, index: int,
                request_json: Mapping[str, Any]) -> dict[str, Any]:
    """A documented GenerateContentResponse for a text or function-call step."""
    parts: list[dict[str, Any]] = []
    if step.text is not None:
        parts.append({"text": step.text})
    if isinstance(step, CallStep):
        parts.append({"functionCall": {"name": step.call, "args": dict(step.args)}})
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    answer_tokens = len((step.text or "").split()) + (len(json.dumps(step.args).split()) if isinstance(step, CallStep)
                                                      else 0)
    return _envelope([candidate], model=model, agent=agent, index=index, request_json=request_json,
                     answer_tokens=answer_tokens)


def _envelope(candidates: list[dict[str, Any]] | None, *, model: str, agent: str, index: int,
              request_json: Mapping[str, Any], answer_tokens: int = 0) -> dict[str, Any]:
    prompt_tokens = count_tokens(request_json.get("contents")) + count_tokens(request_json.get("systemInstruction"))
    body: dict[str, Any] = {}
    if candidates is not None:
        body["candidates"] = candidates
    body["usageMetadata"] = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": answer_tokens,
                             "totalTokenCount": prompt_tokens + answer_tokens}
    body["modelVersion"] = model
    body["responseId"] = f"scripted-{agent}-{index}"
    return body


class ScriptedEndpoint:
    """Serve a model script over HTTP on 127.0.0.1; use as ``with ScriptedEndpoint(script) as ep:``."""

    def __init__(self, script: Mapping[str, Sequence[ModelStep]], *,
                 agent_resolver: AgentResolver = agent_from_request,
                 on_served: Callable[[str, int], None] | None = None) -> None:
        # told (agent, step index) of each call that reached the script, under the lock: a step served, or an index
        # past the agent's steps (a call that found none left and was answered HTTP 400)
        self._on_served = on_served
        self._script = {agent: tuple(steps) for agent, steps in script.items()}
        self._resolve_agent = agent_resolver
        self._served: dict[str, set[int]] = {}  # per agent, the indices of the steps already served
        self._extra: dict[str, int] = {}  # per agent, calls that found no step left
        self._calls: list[ServedCall] = []
        self._refused: list[str] = []
        self._lock = threading.Lock()
        self._server = LoopbackServer(
            lambda app: app.router.add_post("/{version}/models/{model_action}", self._handle), name="scripted-gemini")

    # -- lifecycle -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` while the endpoint runs."""
        if self._server.port is None:
            raise ScriptedEndpointError("ScriptedEndpoint.base_url is only known while the endpoint runs: "
                                        "use it inside `with ScriptedEndpoint(script) as endpoint:`.")
        return f"http://127.0.0.1:{self._server.port}"

    def __enter__(self) -> ScriptedEndpoint:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._server.running:
            raise ScriptedEndpointError("ScriptedEndpoint.start() called twice; stop() it first.")
        try:
            self._server.start()
        except BaseException as exc:
            raise ScriptedEndpointError(f"The scripted Gemini endpoint could not listen on 127.0.0.1: {exc!r}") from exc

    def stop(self) -> None:
        self._server.stop()

    # -- what was served ---------------------------------------------------------

    @property
    def calls(self) -> list[ServedCall]:
        """Every generate call received so far, in arrival order."""
        with self._lock:
            return list(self._calls)

    @property
    def refused(self) -> list[str]:
        """Requests answered with an HTTP error before any step was taken: status and reason, in order."""
        with self._lock:
            return list(self._refused)

    def _refuse(self, status: int, reason: str) -> None:
        with self._lock:
            self._refused.append(f"HTTP {status}: {reason}")

    def unserved(self) -> dict[str, int]:
        """Per agent, how many scripted steps were never asked for."""
        with self._lock:
            return {agent: len(steps) - len(self._served.get(agent, ()))
                    for agent, steps in self._script.items() if len(steps) > len(self._served.get(agent, ()))}

    def _take_step(self, agent: str, request_json: Mapping[str, Any], model: str, action: str
                   ) -> tuple[int, ModelStep | None]:
        """The step for this call: the first unserved one whose ``when`` the prompt contains, else the first
        unserved one without ``when``; None (and an index past the script) when none is left."""
        prompt = " ".join(_texts(request_json.get("contents")))
        with self._lock:
            steps = self._script.get(agent, ())
            served = self._served.setdefault(agent, set())
            free = [i for i in range(len(steps)) if i not in served]
            index = next((i for i in free if getattr(steps[i], "when", None) and steps[i].when in prompt),
                         next((i for i in free if not getattr(steps[i], "when", None)), None))
            if index is None:
                index = len(steps) + self._extra.get(agent, 0)
                self._extra[agent] = self._extra.get(agent, 0) + 1
                step = None
                if self._on_served is not None:
                    self._on_served(agent, index)
            else:
                served.add(index)
                step = steps[index]
                if self._on_served is not None:
                    self._on_served(agent, index)
            self._calls.append(ServedCall(agent, index, step, request_json, model, action))
            return index, step

    # -- HTTP ----------------------------------------------------------------------

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        model, _, action = request.match_info["model_action"].partition(":")
        if action not in _ACTIONS:
            message = f"The scripted endpoint serves models/MODEL:{{{','.join(_ACTIONS)}}}, not {request.path}."
            self._refuse(404, message)
            return web.json_response(google_error(404, "NOT_FOUND", message), status=404)
        try:
            request_json = json.loads(await request.read() or b"{}")
        except ValueError:
            request_json = None
        if not isinstance(request_json, dict):
            self._refuse(400, f"the body of POST {request.path} is not a JSON object")
            return web.json_response(google_error(400, "INVALID_ARGUMENT", "Request body is not a JSON object."),
                                     status=400)
        if action == "countTokens":
            return web.json_response({"totalTokens": count_tokens(request_json)})

        agent = self._resolve_agent(request_json)
        index, step = self._take_step(agent, request_json, model, action)
        if step is None:
            return web.json_response(google_error(400, "FAILED_PRECONDITION", self._exhausted(agent, index)),
                                     status=400)
        status, headers, body = await self._answer(step, model=model, agent=agent, index=index,
                                                   request_json=request_json)
        if action == "streamGenerateContent" and status == 200:
            body = self._as_stream(body, sse=request.query.get("alt") == "sse")
            content_type = "text/event-stream" if request.query.get("alt") == "sse" else "application/json"
        else:
            content_type = "application/json"
        return web.Response(status=status, body=body, headers={**headers, "Content-Type": content_type})

    def _exhausted(self, agent: str, index: int) -> str:
        steps = len(self._script.get(agent, ()))
        known = ", ".join(sorted(self._script)) or "no agent"
        return (f"Scripted endpoint: call index {index} of agent {agent!r} has no step: the scenario's script "
                f"for {agent} has only {steps} steps (the script has steps for: {known}). Add steps under "
                f"script.{agent} in the scenario, or find why the agent calls its model more often than scripted.")

    async def _answer(self, step: ModelStep, *, model: str, agent: str, index: int,
                      request_json: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
        where = dict(model=model, agent=agent, index=index, request_json=request_json)
        if isinstance(step, (TextStep, CallStep)):
            headers = {}
            if getattr(step, "delay", 0):  # recorded in the cassette, so replay waits as long (replay_delays.py)
                await asyncio.sleep(step.delay)
                headers[DELAY_HEADER] = f"{step.delay:g}"
            return 200, headers, json.dumps(answer_json(step, **where)).encode()
        if isinstance(step, ResponseStep):  # recorded elsewhere (ADK conformance): served exactly as recorded
            return 200, {}, json.dumps(step.response).encode()
        assert isinstance(step, FaultStep)
        fault = step.fault
        if fault in _HTTP_FAULTS:
            code, status, message = _HTTP_FAULTS[fault]
            body = google_error(code, status, f"{message} [scripted fault {fault}: {agent} call index {index}]")
            headers = {}
            if fault == "http_429":
                seconds = step.retry_after if step.retry_after is not None else 1
                headers["Retry-After"] = f"{seconds:g}"
                body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                             "retryDelay": f"{seconds:g}s"}]
            return code, headers, json.dumps(body).encode()
        if fault == "malformed":
            return 200, {}, b"{candidates: [this is not JSON"
        if fault == "truncated":
            whole = json.dumps(answer_json(TextStep(text="scripted truncated answer"), **where)).encode()
            return 200, {}, whole[: len(whole) // 2]
        if fault == "slow":
            await asyncio.sleep(step.delay)
            return 200, {}, json.dumps(answer_json(TextStep(text=SLOW_ANSWER_TEXT), **where)).encode()
        if fault == "empty":
            return 200, {}, json.dumps(_envelope(None, **where)).encode()
        if fault == "safety":
            candidate = {"finishReason": "SAFETY", "index": 0, "safetyRatings": [
                {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]}
            return 200, {}, json.dumps(_envelope([candidate], **where)).encode()
        raise ScriptedEndpointError(f"Unknown fault {fault!r} in the script of {agent} (step {index}).")

    @staticmethod
    def _as_stream(body: bytes, *, sse: bool) -> bytes:
        if sse:
            return b"data: " + body + b"\r\n\r\n"
        return b"[" + body + b"]"
