"""Executor side of the LM bridge: ``llm_query`` goes over a local socket to the host.

Why a bridge: the host process owns the model client, so every sub-LM call is
made (and recorded, replayed, counted) in one place, as in the RLM reference
implementation's LM handler. Wire format, one JSON object per line:

    request   {"id": 1, "prompts": ["...", ...]}
    response  {"id": 1, "responses": ["...", ...]}   or   {"id": 1, "error": "..."}

A batch is one request: the host answers its prompts concurrently.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any


class SubLmError(RuntimeError):
    """The host could not answer a sub-LM request (model error, bridge failure)."""


class SubLmBudgetExceeded(SubLmError):
    """The run asked for more sub-LM calls than ``--max-sublm-calls`` allows."""


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--lm-address must look like host:port, got {address!r}")
    return host, int(port)


class BudgetedLmClient:
    """What both ``llm_query`` clients share: the prompt check, the per-run call cap, one request at a time,
    and per-prompt call metadata for the result JSON. A subclass says how a request is answered."""

    def __init__(self, *, max_calls: int) -> None:
        self._max_calls = max_calls
        self._next_id = 0
        self._used = 0
        # User code may call llm_query from threads; one request (a prompt or a batch) at a time.
        self._lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        # One row per llm_query_batched call as the code saw it: prompts and wall time (the REPL times it).
        self.batches: list[dict[str, Any]] = []

    @property
    def used(self) -> int:
        return self._used

    def _ready(self) -> None:
        """Raise if no request can be sent at all (nothing is counted then)."""

    def _send(self, request_id: int, prompts: list[str]) -> tuple[list[str], list[Any]]:
        """The answers to ``prompts``, in order, and the tokens each used (where known)."""
        raise NotImplementedError

    def query(self, prompts: list[str], *, batched: bool) -> list[str]:
        check_prompts(prompts, batched=batched)
        if not prompts:
            return []
        with self._lock:
            self._ready()
            self._used = reserve_calls(self._used, len(prompts), self._max_calls)
            self._next_id += 1
            request_id = self._next_id
            started = time.perf_counter()
            error: str | None = None
            responses: list[str] = []
            tokens: list[Any] = []
            try:
                responses, tokens = self._send(request_id, prompts)
            except BaseException as exc:  # recorded, then re-raised into user code (timeouts included)
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                record_calls(self.calls, prompts, responses, tokens, request_id=request_id, batched=batched,
                             latency_s=round(time.perf_counter() - started, 6), error=error)
            return responses


class LmClient(BudgetedLmClient):
    """Sends prompts to the host over the LM bridge."""

    def __init__(self, address: str | None, *, max_calls: int, connect_timeout_s: float = 10.0) -> None:
        super().__init__(max_calls=max_calls)
        self._address = parse_address(address) if address else None
        self._connect_timeout_s = connect_timeout_s
        self._sock: socket.socket | None = None
        self._file: Any = None

    def _ready(self) -> None:
        if self._address is None:
            raise RuntimeError(
                "llm_query is unavailable: this executor was started without --lm-address, "
                "so there is no LM bridge to send prompts to"
            )

    def _send(self, request_id: int, prompts: list[str]) -> tuple[list[str], list[Any]]:
        return read_reply(self._roundtrip({"id": request_id, "prompts": prompts}), request_id, prompts)

    def _roundtrip(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._file is None:
            assert self._address is not None
            try:
                self._sock = socket.create_connection(self._address, timeout=self._connect_timeout_s)
            except OSError as exc:
                raise SubLmError(f"cannot reach the LM bridge at {self._address[0]}:{self._address[1]}: {exc}") from exc
            # No read timeout: a slow model is bounded by the executor's soft timeout instead.
            self._sock.settimeout(None)
            self._file = self._sock.makefile("rwb")
        try:
            self._file.write(json.dumps(message).encode("utf-8") + b"\n")
            self._file.flush()
            line = self._file.readline()
        except OSError as exc:
            self.close()
            raise SubLmError(f"LM bridge connection failed: {exc}") from exc
        except BaseException:
            # Interrupted mid-request (soft timeout): the stream is out of step, start afresh.
            self.close()
            raise
        if not line:
            self.close()
            raise SubLmError("LM bridge closed the connection")
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise SubLmError(f"LM bridge sent invalid JSON: {exc}") from exc
        if not isinstance(reply, dict):
            raise SubLmError("LM bridge sent a non-object reply")
        return reply

    def close(self) -> None:
        for closable in (self._file, self._sock):
            try:
                if closable is not None:
                    closable.close()
            except OSError:
                pass
        self._file = None
        self._sock = None


def read_reply(reply: dict[str, Any], request_id: int, prompts: list[str],
               where: str = "LM bridge") -> tuple[list[str], list[Any]]:
    """The answers and tokens of a host's reply ``{"id", "responses", "tokens"}`` or ``{"id", "error"}``."""
    if reply.get("id") != request_id:
        raise SubLmError(f"{where} answered request {reply.get('id')!r}, expected {request_id}")
    if "error" in reply:
        raise SubLmError(f"sub-LM call failed: {reply['error']}")
    responses = reply.get("responses")
    if not isinstance(responses, list) or len(responses) != len(prompts):
        raise SubLmError(f"{where} returned a malformed response (wrong number of answers)")
    tokens = reply.get("tokens") if isinstance(reply.get("tokens"), list) else []
    return [r if isinstance(r, str) else str(r) for r in responses], tokens


def record_calls(calls: list[dict[str, Any]], prompts: list[str], responses: list[str], tokens: list[Any], *,
                 request_id: int, batched: bool, latency_s: float, error: str | None) -> None:
    """Append one metadata row per prompt: the per-call metrics of seed 004, shared by both LM clients."""
    for i, prompt in enumerate(prompts):
        calls.append(
            {
                "index": len(calls),
                "request_id": request_id,
                "batched": batched,
                "batch_size": len(prompts),
                "latency_s": latency_s,
                "prompt_chars": len(prompt),
                "response_chars": len(responses[i]) if i < len(responses) else None,
                # Tokens the model reported for this call (prompt + answer).
                "tokens": tokens[i] if i < len(tokens) else None,
                "error": error,
            }
        )


def check_prompts(prompts: list[Any], *, batched: bool) -> None:
    """Every prompt must be a string; say which one is not."""
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            where = f"prompt {i}" if batched else "the prompt"
            raise TypeError(f"llm_query: {where} must be a str, got {type(prompt).__name__}")


def reserve_calls(used: int, requested: int, max_calls: int) -> int:
    """The new call count after ``requested`` more calls, or ``SubLmBudgetExceeded`` if over the per-run cap."""
    if used + requested > max_calls:
        raise SubLmBudgetExceeded(
            f"sub-LM budget exceeded: at most {max_calls} sub-LM calls (prompts) per run; "
            f"{used} already made, {requested} more requested. "
            "Batch fewer, larger prompts or answer from the data you already have."
        )
    return used + requested
