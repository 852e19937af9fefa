"""Client timeouts in cassettes: vcrpy records nothing for a request the client gave up on.

While recording, such a request is stored as a marked 408 interaction; during
replay, playing it raises ``TimeoutError`` as the client did, so a slow-model
scenario replays to the same outcome.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vcr.cassette import Cassette
    from vcr.request import Request

TIMEOUT_HEADER = "x-rlm-conformance-replay"
TIMEOUT_MARK = "client-timeout"


def timeout_response() -> dict[str, Any]:
    """The interaction recorded for a request the client gave up on; replay raises ``TimeoutError`` for it.

    vcrpy records answered requests only: without this a timed-out call would be
    missing from the cassette and replay would give its slot to the next call.
    Replayed without this harness, it is a plain HTTP 408 error.
    """
    body = {"error": {"code": 408, "status": "DEADLINE_EXCEEDED", "message": (
        "rlm-conformance: the client timed out waiting for this answer while recording; replay raises "
        "TimeoutError here, as the HTTP client did.")}}
    return {"status": {"code": 408, "message": "Request Timeout"},
            "headers": {TIMEOUT_HEADER: [TIMEOUT_MARK], "Content-Type": ["application/json"]},
            "body": {"string": json.dumps(body)}}


def is_timeout_response(response: Any) -> bool:
    headers = response.get("headers") if isinstance(response, dict) else None
    return isinstance(headers, dict) and any(
        name.lower() == TIMEOUT_HEADER and TIMEOUT_MARK in (values if isinstance(values, list) else [values])
        for name, values in headers.items())


@contextlib.contextmanager
def record_client_timeouts(cassette: Cassette) -> Iterator[None]:
    """While ``cassette`` records: an aiohttp request that times out is recorded as ``timeout_response()``.

    Wraps vcrpy's patched ``aiohttp.ClientSession._request``, so enter it inside
    ``use_cassette`` (it restores vcrpy's stub on exit, before vcrpy unpatches).
    """
    import aiohttp.client
    from vcr.request import Request

    stub = aiohttp.client.ClientSession._request

    @functools.wraps(stub)
    async def request(self: Any, method: str, url: Any, **kwargs: Any) -> Any:
        try:
            return await stub(self, method, url, **kwargs)
        except TimeoutError:  # asyncio.TimeoutError and aiohttp's ServerTimeoutError alike
            body = kwargs.get("data") if kwargs.get("data") is not None else kwargs.get("json")
            if body is not None and not isinstance(body, (str, bytes)):
                body = json.dumps(body)
            headers = {str(k): str(v) for k, v in dict(kwargs.get("headers") or {}).items()}
            cassette.append(Request(method, str(url), body, headers), timeout_response())
            raise

    aiohttp.client.ClientSession._request = request  # type: ignore[method-assign]
    try:
        yield
    finally:
        aiohttp.client.ClientSession._request = stub  # type: ignore[method-assign]


def replay_client_timeouts(cassette: Cassette) -> None:
    """During replay: playing a ``timeout_response()`` raises ``TimeoutError``, as the client did when recording."""
    play = cassette.play_response

    def play_response(request: Request) -> Any:
        response = play(request)
        if is_timeout_response(response):
            raise TimeoutError()  # what aiohttp raised (asyncio.TimeoutError, no message)
        return response

    cassette.play_response = play_response  # type: ignore[method-assign]
