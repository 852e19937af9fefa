"""Proposed speed cuts, applied as reversible patches so the bench can *measure* each claim.

None of these is active in a normal run. The suite benchmark runs the scenarios
once plain and once under each cut (interleaved, same process, same run), and
reports the difference. Each cut names the file and function that would change
for real; the patch here reproduces that change without editing the file.

* ``shared_ssl`` — harness/llm/modes.py, ``ModelEndpoint.gemini``/``genai_client``:
  every ``google.genai.Client`` builds three SSL contexts (httpx, aiohttp,
  websocket), each loading the certifi CA bundle (~30 ms each). The harness builds
  two clients per scenario (ADK's ``Gemini`` and the sub-LM client). Passing one
  process-wide context in ``HttpOptions.client_args``/``async_client_args`` makes
  a client ~1 ms instead of ~100 ms.
* ``no_jitter`` — harness/run_options.py, ``RETRY_OPTIONS``: ``jitter`` is unset, so
  google-genai adds up to 1 s of random jitter, capped by ``max_delay`` = 0.2 s: a
  retried call nearly always sleeps the full 0.2 s. ``jitter=0`` sleeps 0.05 s,
  0.1 s, ... as ``initial_delay`` intends, and makes the wait deterministic.
"""

from __future__ import annotations

import contextlib
import functools
import os
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@functools.cache
def _ssl_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile, capath=capath)


def shared_ssl_context() -> ssl.SSLContext:
    """The one SSL context of the process, built as google-genai builds its own (certifi, or SSL_CERT_*)."""
    import certifi

    return _ssl_context(os.environ.get("SSL_CERT_FILE", certifi.where()), os.environ.get("SSL_CERT_DIR"))


def shared_http_options(base: Any = None) -> Any:
    """``HttpOptions`` that hand google-genai the shared SSL context for httpx, aiohttp and websockets."""
    from google.genai import types

    ctx = shared_ssl_context()
    base = base or types.HttpOptions()
    return base.model_copy(update={"client_args": {**(base.client_args or {}), "verify": ctx},
                                   "async_client_args": {**(base.async_client_args or {}), "ssl": ctx,
                                                         "verify": ctx}})


@contextlib.contextmanager
def _shared_ssl() -> Iterator[None]:
    from google.genai import Client, types

    from harness.llm import modes

    original_gemini, original_client = modes.ModelEndpoint.gemini, modes.ModelEndpoint.genai_client

    def gemini(self: Any, **kwargs: Any) -> Any:
        from adk_compat import gemini as adk_gemini

        client_kwargs = {**self.client_kwargs(), "http_options": shared_http_options()}
        return adk_gemini(model=self.model, base_url=self.base_url, client_kwargs=client_kwargs, **kwargs)

    def genai_client(self: Any, *, http_options: Any = None) -> Any:
        options = shared_http_options(http_options or types.HttpOptions())
        options = options.model_copy(update={"base_url": self.base_url})
        return Client(http_options=options, **self.client_kwargs())

    modes.ModelEndpoint.gemini, modes.ModelEndpoint.genai_client = gemini, genai_client
    try:
        yield
    finally:
        modes.ModelEndpoint.gemini, modes.ModelEndpoint.genai_client = original_gemini, original_client


@contextlib.contextmanager
def _no_jitter() -> Iterator[None]:
    from harness import run_options, runner

    original = run_options.RETRY_OPTIONS
    # Both names: the agent's model reads runner's, the sub-LM run_options' (at call time).
    runner.RETRY_OPTIONS = run_options.RETRY_OPTIONS = original.model_copy(update={"jitter": 0.0})
    try:
        yield
    finally:
        runner.RETRY_OPTIONS = run_options.RETRY_OPTIONS = original


CUTS: dict[str, tuple[Callable[[], contextlib.AbstractContextManager[None]], str]] = {
    "shared_ssl": (_shared_ssl, ("harness/llm/modes.py ModelEndpoint.gemini/genai_client: one process-wide "
                                 "SSL context in HttpOptions.client_args/async_client_args")),
    "no_jitter": (_no_jitter, "harness/run_options.py RETRY_OPTIONS: jitter=0.0"),
}


@contextlib.contextmanager
def applied(names: list[str] | tuple[str, ...]) -> Iterator[None]:
    """Apply the named cuts for the duration of the block ("all" = every cut)."""
    if list(names) == ["all"]:
        names = list(CUTS)
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(CUTS[name][0]())
        yield


# --- micro-benchmarks: the unit each cut removes, measured as is and with the cut ------------------


def _interleaved(a: Callable[[int], Any], b: Callable[[int], Any], runs: int) -> tuple[float, float]:
    """Median seconds of ``a`` and of ``b``, run alternately (a noisy second hits both)."""
    import statistics
    import time

    ta: list[float] = []
    tb: list[float] = []
    for i in range(runs):
        for fn, out in ((a, ta), (b, tb)):
            started = time.perf_counter()
            fn(i)
            out.append(time.perf_counter() - started)
    return statistics.median(ta), statistics.median(tb)


def backoff_s(attempt: int, options: Any) -> float:
    """One draw of google-genai's wait before retry ``attempt``: tenacity.wait_exponential_jitter, jitter 1 if unset."""
    import random

    jitter = 1.0 if options.jitter is None else options.jitter
    delay = options.initial_delay * options.exp_base ** (attempt - 1) + random.uniform(0, jitter)
    return max(0.0, min(delay, options.max_delay))


def expected_backoff_s(attempt: int, options: Any) -> float:
    """Mean sleep of google-genai's wait_exponential_jitter before retry ``attempt`` (1-based)."""
    jitter = 1.0 if options.jitter is None else options.jitter
    base = options.initial_delay * options.exp_base ** (attempt - 1)
    cap = options.max_delay
    if jitter <= 0:
        return min(base, cap)
    # E[min(base + U(0, jitter), cap)]
    if base >= cap:
        return cap
    if base + jitter <= cap:
        return base + jitter / 2
    below = cap - base  # the part of the uniform range that stays under the cap
    return (below / jitter) * (base + below / 2) + (1 - below / jitter) * cap


def micro(folder: Path, scenarios: list[Any], runs: int = 7) -> dict[str, dict[str, Any]]:
    """Per cut: the unit cost as is and with the cut, how often a suite pays it, the projected saving."""
    from google.genai import Client

    from harness.runner import RETRY_OPTIONS
    from harness.scenario.script import FaultStep

    out: dict[str, dict[str, Any]] = {}
    n = len(scenarios)

    Client(api_key="bench", vertexai=False)  # imports and first-use costs out of the way
    as_is, cut = _interleaved(lambda i: Client(api_key="bench", vertexai=False),
                              lambda i: Client(api_key="bench", vertexai=False, http_options=shared_http_options()),
                              runs)
    out["shared_ssl"] = {"unit": "google.genai.Client construction", "as_is_s": as_is, "cut_s": cut,
                         "per_suite": 2 * n, "why": "ADK's Gemini client and the sub-LM client, per scenario"}

    retries: list[int] = []  # the attempt number before each back-off sleep, over the whole suite
    for scenario in scenarios:
        for steps in scenario.script.values():
            attempt = 0
            for step in steps:
                if isinstance(step, FaultStep) and step.fault.startswith("http_"):
                    attempt += 1
                    if attempt < (RETRY_OPTIONS.attempts or 1):
                        retries.append(attempt)
                    else:
                        attempt = 0
                else:
                    attempt = 0
    no_jitter = RETRY_OPTIONS.model_copy(update={"jitter": 0.0})
    as_is = sum(expected_backoff_s(a, RETRY_OPTIONS) for a in retries)
    cut = sum(expected_backoff_s(a, no_jitter) for a in retries)
    out["no_jitter"] = {"unit": f"expected back-off sleeps of the suite ({len(retries)} retries; computed from "
                                "the retry policy, not timed)", "as_is_s": as_is, "cut_s": cut, "per_suite": 1,
                        "why": "scripted HTTP 429/500 faults"}
    for entry in out.values():
        entry["saving_per_suite_s"] = (entry["as_is_s"] - entry["cut_s"]) * entry["per_suite"]
    return out
