"""Direct mode of ``llm_query``: the executor calls the model itself with google-genai (``--lm-direct MODEL``).

For Job_B on Databricks, where nothing on the cluster can reach the caller's LM
bridge. ``GOOGLE_API_KEY`` comes from the environment (on a workspace: the
cluster's ``spark_env_vars`` from the secret scope named by
``RLM_DATABRICKS_GENAI_SECRET``), ``GOOGLE_GEMINI_BASE_URL`` optionally points
the client elsewhere (the harness's scripted endpoint when recording).

It behaves as ``LmClient`` plus the host's ``LmBridge`` do together: the same
per-run call cap (``SubLmBudgetExceeded``), the same token budget check, the
same error texts and the same per-call metadata in the result JSON. A batch is
answered concurrently (one thread per prompt). google-genai is imported on the
first call only, so the executor stays light in bridge mode.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .lm_client import BudgetedLmClient, SubLmError

API_KEY_VARIABLE = "GOOGLE_API_KEY"
BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"
SECRET_SETTING = "RLM_DATABRICKS_GENAI_SECRET"
_MAX_THREADS = 32


def _make_client() -> Any:
    """A google-genai client from the environment (imported here: only direct mode pays for google-genai)."""
    key = os.environ.get(API_KEY_VARIABLE)
    if not key:
        raise SubLmError(
            f"llm_query in direct mode needs {API_KEY_VARIABLE} in Job_B's environment, and it is not set. On "
            f"Databricks it comes from a secret scope: set {SECRET_SETTING}=scope/key (the secret holding the "
            f"Gemini API key), which puts {API_KEY_VARIABLE}={{{{secrets/scope/key}}}} in the cluster's "
            "spark_env_vars. Answer from the data in `context` until then."
        )
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:
        raise SubLmError(f"llm_query in direct mode needs google-genai on this compute: {exc}") from None
    options = types.HttpOptions(
        base_url=os.environ.get(BASE_URL_VARIABLE) or None,
        retry_options=types.HttpRetryOptions(attempts=3, initial_delay=0.05, max_delay=0.2,
                                             http_status_codes=[429, 500, 503]),
    )
    return genai.Client(api_key=key, http_options=options)


class DirectLmClient(BudgetedLmClient):
    """``llm_query`` answered by google-genai from the executor itself (same surface as ``LmClient``)."""

    def __init__(self, model: str, *, max_calls: int, max_tokens: int | None = None) -> None:
        super().__init__(max_calls=max_calls)
        self.model = model
        self._max_tokens = max_tokens
        self._client: Any = None
        self.tokens_used = 0

    def _generate(self, prompt: str) -> tuple[str, int | None]:
        response = self._client.models.generate_content(model=self.model, contents=prompt)
        usage = getattr(response, "usage_metadata", None)
        return response.text or "", getattr(usage, "total_token_count", None)

    def _complete(self, prompts: list[str]) -> tuple[list[str], list[int | None]]:
        """What ``LmBridge._complete`` does on the host: every prompt at once, the first failure named."""
        if self._max_tokens is not None and self.tokens_used >= self._max_tokens:
            raise SubLmError(f"sub-LM call failed: sub-LM token budget exhausted: {self.tokens_used} of the "
                             f"{self._max_tokens} tokens left for this session are used; answer with what you have")
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
                pool.shutdown(wait=False, cancel_futures=True)  # interrupted (soft timeout): do not wait
        failures = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
        if failures:
            i, exc = failures[0]
            where = f"prompt {i + 1} of {len(prompts)}" if len(prompts) > 1 else "the prompt"
            raise SubLmError(f"sub-LM call failed: {where} failed: {type(exc).__name__}: {exc}")
        tokens = [t for _, t in outcomes]
        self.tokens_used += sum(t for t in tokens if t)
        return [text for text, _ in outcomes], tokens

    def _ready(self) -> None:
        if self._client is None:
            self._client = _make_client()

    def _send(self, request_id: int, prompts: list[str]) -> tuple[list[str], list[int | None]]:
        return self._complete(prompts)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing must never cost the result
                pass
