"""Direct mode of ``llm_query``: Job_B's supervisor calls the model over Gemini's REST API (``--lm-direct MODEL``).

For Job_B on Databricks, where nothing on the cluster can reach the caller's LM
bridge. The supervisor (``supervisor.py``) holds the key (``credential.py``: taken
from its environment, where the cluster's ``spark_env_vars`` put it from the secret
scope named by ``RLM_DATABRICKS_GENAI_SECRET``) and answers the analyst's code over
its own loopback bridge (``model_bridge.py``) with ``GeminiAnswers``; the code's
process never holds the key. ``GOOGLE_GEMINI_BASE_URL`` optionally points it
elsewhere (the harness's scripted endpoint when recording).

Standard library only (``urllib``), so the payload wheel Job_B runs from has no
dependency: ``POST {base}/v1beta/models/{model}:generateContent`` with the key
in ``x-goog-api-key``, as documented for the Gemini API, and as google-genai
sends it. Answers that fail with 429, 500 or 503 are retried twice (short
backoff, ``Retry-After`` honoured up to the cap); what still fails is named as
google-genai names it (``ClientError``/``ServerError: <code> <STATUS>. ...``).

With the bridge it behaves as the host's ``LmBridge`` on this machine: the same
token budget check, the same error texts and (in the code's ``LmClient``) the same
per-call metadata in the result JSON. A batch is answered concurrently (one thread
per prompt).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .credential import ModelCredential, missing_key_message
from .lm_client import SubLmError

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
RETRY_STATUSES = (429, 500, 503)
ATTEMPTS = 3
_INITIAL_DELAY_S, _MAX_DELAY_S = 0.05, 0.2
_REQUEST_TIMEOUT_S = 600.0  # a slow model is bounded by the executor's soft timeout first
_MAX_THREADS = 32


class ApiError(Exception):
    """A non-2xx answer, named as google-genai names it: ``<code> <STATUS>. <body>``."""

    def __init__(self, code: int, status: str, body: Any) -> None:
        super().__init__(f"{code} {status}. {body}")
        self.code = code


class ClientError(ApiError):
    """A 4xx answer."""


class ServerError(ApiError):
    """A 5xx answer."""


class GeminiRest:
    """``generateContent`` over ``urllib``: the key, the base URL and the retries of the google-genai client."""

    def __init__(self, api_key: str, base_url: str | None = None) -> None:
        self.api_key = api_key
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")

    def url(self, model: str) -> str:
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        return f"{self.base_url}/{API_VERSION}/{name}:generateContent"

    def generate(self, model: str, prompt: str) -> tuple[str, int | None]:
        """The answer's text and ``usageMetadata.totalTokenCount`` (None when not reported)."""
        body = json.dumps({"contents": [{"role": "user", "parts": [{"text": prompt}]}]}).encode("utf-8")
        delay = _INITIAL_DELAY_S
        for attempt in range(1, ATTEMPTS + 1):
            request = urllib.request.Request(self.url(model), data=body, method="POST", headers={
                "Content-Type": "application/json", "x-goog-api-key": self.api_key})
            try:
                with urllib.request.urlopen(request, timeout=_REQUEST_TIMEOUT_S) as response:
                    return _read_answer(response.read())
            except urllib.error.HTTPError as exc:
                error = _api_error(exc.code, exc.read())
                if exc.code not in RETRY_STATUSES or attempt == ATTEMPTS:
                    raise error from None
                time.sleep(min(_MAX_DELAY_S, max(delay, _retry_after(exc.headers.get("Retry-After")))))
                delay = min(_MAX_DELAY_S, delay * 2)
        raise AssertionError("unreachable")  # pragma: no cover


def _read_answer(raw: bytes) -> tuple[str, int | None]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the model's answer is not JSON ({exc}): {raw[:200]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the model's answer is not a JSON object: {raw[:200]!r}")
    candidates = data.get("candidates") or []
    parts = ((candidates[0] or {}).get("content") or {}).get("parts") or [] if candidates else []
    # As google-genai's response.text: the text parts of the first candidate, thoughts left out.
    text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
    tokens = (data.get("usageMetadata") or {}).get("totalTokenCount")
    return text, tokens if isinstance(tokens, int) else None


def _api_error(code: int, raw: bytes) -> ApiError:
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", errors="replace")
    status = body.get("error", {}).get("status", "") if isinstance(body, dict) else ""
    return (ServerError if code >= 500 else ClientError)(code, status, body)


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


class GeminiAnswers:
    """What the host's ``LmBridge`` does with a request, over Gemini's REST API: every prompt at once, the
    session's token budget kept, the first failure named. Raises ``SubLmError`` with the bridge's texts."""

    def __init__(self, model: str, credential: ModelCredential, *, max_tokens: int | None = None) -> None:
        self.model = model
        self._rest = GeminiRest(credential.api_key, credential.base_url) if credential.api_key else None
        self._max_tokens = max_tokens
        self.tokens_used = 0

    def _generate(self, prompt: str) -> tuple[str, int | None]:
        assert self._rest is not None
        return self._rest.generate(self.model, prompt)

    def answer(self, prompts: list[str]) -> tuple[list[str], list[int | None]]:
        if self._rest is None:
            raise SubLmError(missing_key_message())
        if self._max_tokens is not None and self.tokens_used >= self._max_tokens:
            raise SubLmError(f"sub-LM token budget exhausted: {self.tokens_used} of the {self._max_tokens} tokens "
                             "left for this session are used; answer with what you have")
        outcomes: list[Any] = [None] * len(prompts)
        if len(prompts) == 1:
            try:
                outcomes[0] = self._generate(prompts[0])
            except Exception as exc:  # noqa: BLE001 - reported as the bridge reports it
                outcomes[0] = exc
        else:
            pool = ThreadPoolExecutor(max_workers=min(_MAX_THREADS, len(prompts)), thread_name_prefix="llm_query")
            try:
                futures = [pool.submit(self._generate, p) for p in prompts]
                for i, future in enumerate(futures):
                    try:
                        outcomes[i] = future.result()
                    except Exception as exc:  # noqa: BLE001
                        outcomes[i] = exc
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        failures = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
        if failures:
            i, exc = failures[0]
            where = f"prompt {i + 1} of {len(prompts)}" if len(prompts) > 1 else "the prompt"
            raise SubLmError(f"{where} failed: {type(exc).__name__}: {exc}")
        tokens = [t for _, t in outcomes]
        self.tokens_used += sum(t for t in tokens if t)
        return [text for text, _ in outcomes], tokens
