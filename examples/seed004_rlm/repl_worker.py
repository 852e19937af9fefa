"""The REPL worker: a subprocess that runs code blocks in one namespace kept across requests.

Run as a script (``python repl_worker.py``); it imports nothing from this package, only the
standard library and google-genai. Protocol, one JSON object per line:

* request on stdin:  ``{"blocks": [str, ...], "context": <JSON>, "stdout_cap": int}``
* answer on stdout: ``{"stdout", "stderr", "stdout_chars", "error", "final_answer", "sublm_calls"}``

The namespace offers ``context``, ``llm_query(prompt)``, ``llm_query_batched(prompts)``
(concurrent, one thread per prompt up to ``RLM_SUBLM_CONCURRENCY``), ``FINAL(answer)`` and
``FINAL_VAR(name)``. Sub-LM calls go through ``genai.Client()`` built with no arguments, so it
reads ``GOOGLE_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` from the environment; the model is
``RLM_SUBLM_MODEL`` (default gemini-2.5-flash).

Executed code cannot write to the protocol channel: file descriptor 1 is pointed at stderr
before any code runs, and ``sys.stdout`` is captured (up to ``stdout_cap`` characters) while it runs.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

DEFAULT_SUBLM_MODEL = "gemini-2.5-flash"


class CappedBuffer(io.TextIOBase):
    """A text sink that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._parts: list[str] = []
        self._kept = 0
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.total += len(text)
        room = self._cap - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(room, len(text))
        return len(text)

    def getvalue(self) -> str:
        return "".join(self._parts)


class _FinalAnswer:
    def __init__(self) -> None:
        self.value: str | None = None


class SubLm:
    """llm_query / llm_query_batched over google-genai, configured from the environment only."""

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()
        self.calls = 0

    def _client_once(self) -> Any:
        with self._lock:  # one client for all threads of a batch (a second one would be closed under them)
            if self._client is None:
                from google import genai

                self._client = genai.Client()
            self.calls += 1
            return self._client

    def _generate(self, prompt: str) -> str:
        client = self._client_once()
        model = os.environ.get("RLM_SUBLM_MODEL") or DEFAULT_SUBLM_MODEL
        response = client.models.generate_content(model=model, contents=prompt)
        return response.text or ""

    def llm_query(self, prompt: str) -> str:
        return self._generate(str(prompt))

    def llm_query_batched(self, prompts: list[str]) -> list[str]:
        prompts = [str(p) for p in prompts]
        if not prompts:
            return []
        workers = min(len(prompts), int(os.environ.get("RLM_SUBLM_CONCURRENCY", "8")))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._generate, prompts))  # answers in the order of the prompts


def make_namespace(sublm: SubLm, final: _FinalAnswer) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__rlm_repl__"}

    def FINAL(answer: Any) -> None:  # noqa: N802 - the RLM convention
        final.value = str(answer)

    def FINAL_VAR(name: str) -> None:  # noqa: N802 - the RLM convention
        if name not in namespace:
            raise NameError(f"FINAL_VAR: no variable named {name!r} in the REPL")
        final.value = str(namespace[name])

    namespace.update(llm_query=sublm.llm_query, llm_query_batched=sublm.llm_query_batched,
                     FINAL=FINAL, FINAL_VAR=FINAL_VAR)
    return namespace


def run_request(request: dict[str, Any], namespace: dict[str, Any], sublm: SubLm,
                final: _FinalAnswer) -> dict[str, Any]:
    stdout = CappedBuffer(int(request.get("stdout_cap", 100_000)))
    stderr = CappedBuffer(int(request.get("stdout_cap", 100_000)))
    namespace["context"] = request.get("context")
    final.value = None
    calls_before = sublm.calls
    error: str | None = None
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        for index, block in enumerate(request.get("blocks", [])):
            try:
                exec(compile(block, f"<repl block {index + 1}>", "exec"), namespace)
            except BaseException as exc:  # noqa: BLE001 - SystemExit in user code is an error, not our exit
                error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                stderr.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next)))
                break
    finally:
        sys.stdout, sys.stderr = saved
    return {
        "stdout": stdout.getvalue(),
        "stdout_chars": stdout.total,
        "stderr": stderr.getvalue(),
        "error": error,
        "final_answer": final.value,
        "sublm_calls": sublm.calls - calls_before,
    }


def main() -> None:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything executed code writes to fd 1 lands on stderr, never on the protocol
    sys.stdout = sys.stderr
    sublm, final = SubLm(), _FinalAnswer()
    namespace = make_namespace(sublm, final)
    while line := sys.stdin.readline():
        if not line.strip():
            continue
        answer = run_request(json.loads(line), namespace, sublm, final)
        channel.write(json.dumps(answer) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
