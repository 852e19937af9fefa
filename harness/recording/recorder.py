"""The ``vcr.VCR`` of a run: matchers, filters and persister put together, and the ways a run uses it.

Requests to the harness's model gateway (``pass_by``) are no cassette's: the gateway forwards each one, and
the forwarded request is the one recorded and played. Recording both would hold every in-process call twice.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.recording.identity import CassetteIdentity

from .filters import scrub_request, scrub_response
from .matchers import MATCH_ON, method_ci
from .persister import CassettePersister, Provenance

if TYPE_CHECKING:
    import vcr
    from vcr.cassette import Cassette
    from vcr.request import Request


# -- the VCR ---------------------------------------------------------------------------

def make_vcr(*, cassette_dir: str | os.PathLike[str], record_mode: str, provenance: Provenance,
             secrets: Iterable[str] = (), record_on_exception: bool = False, rerecord: str | None = None,
             identity: CassetteIdentity | None = None) -> vcr.VCR:
    """A ``vcr.VCR`` for LLM cassettes (``NAME.yaml`` under ``cassette_dir``).

    ``record_mode`` is vcrpy's (``none`` replays only). ``secrets`` are values that
    must never reach a cassette. A run that raises saves nothing unless
    ``record_on_exception``. ``rerecord`` is the command a damaged cassette's error tells the user to run.
    """
    import vcr

    known = tuple(secrets)
    recorder = vcr.VCR(
        cassette_library_dir=os.fspath(cassette_dir),
        path_transformer=vcr.VCR.ensure_suffix(".yaml"),
        serializer="yaml",
        record_mode=record_mode,
        match_on=MATCH_ON,
        before_record_request=functools.partial(scrub_request, secrets=known),
        before_record_response=functools.partial(scrub_response, secrets=known),
        decode_compressed_response=True,
        record_on_exception=record_on_exception,
        # Re-recording (mode all) writes what this run sent and nothing older: a loaded interaction no new request
        # matched would stay in the file, recorded but never played.
        drop_unused_requests=record_mode == "all",
    )
    recorder.register_matcher("method_ci", method_ci)
    recorder.register_persister(CassettePersister(provenance=provenance, secrets=known,
                                                  replace_broken=record_mode == "all", rerecord=rerecord,
                                                  identity=identity))
    return recorder


def pass_by(recorder: vcr.VCR, origins: Collection[str]) -> None:
    """Let requests to ``origins`` (``http://127.0.0.1:PORT``) pass ``recorder``'s cassettes by: neither
    recorded nor played, sent as they are (vcrpy's meaning of a ``before_record_request`` that returns None).

    For the model gateway (harness/llm/gateway.py): a ``google.genai.Client()`` the agent makes in-process
    calls the gateway through the HTTP clients vcrpy patches, and the gateway forwards the call through them
    again. Only the forwarded call is the model call, recorded once and replayed by the gateway, as it is for
    a subprocess's client, which vcrpy never sees. ``origins`` is read at each request: a gateway started
    after the cassette adds its origin while it runs. Wrap last, after every other rewrite of the request.
    """
    before: Callable[[Request], Request | None] = recorder.before_record_request

    def skip_origins(request: Request) -> Request | None:
        return None if origins and origin_of(request.uri) in origins else before(request)

    recorder.before_record_request = skip_origins


def filter_each_request_once(cassette: Cassette) -> None:
    """Filter a replayed request once, not four times.

    vcrpy runs a request through the cassette's ``before_record_request`` (a deep copy, then the rewrites and the
    scrubbing) in ``can_play_response_for``, again on the copy it made there (``__contains__``), again in
    ``play_response``, and the drift check (drift.py) a fourth time: ~1 % of a replayed suite. The filter is a
    function of the request alone and the filtered copy is only read (matched, compared), so the last request's
    result is kept, and a request that is that result is its own."""
    original = cassette._before_record_request
    last: list[Any] = [None, None]  # the request, what the filter made of it

    def before_record_request(request: Request) -> Request | None:
        if request is last[0] or request is last[1]:
            return last[1]
        filtered = original(request)
        last[:] = [request, filtered]
        return filtered

    cassette._before_record_request = before_record_request


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, the port always written out (``http://127.0.0.1:8000``)."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{parts.hostname}:{port}"


@contextlib.contextmanager
def use_cassette(recorder: vcr.VCR, name: str, **kwargs: Any) -> Iterator[Cassette]:
    """``recorder.use_cassette(name)``, which also unpatches the HTTP clients when saving raises.

    vcrpy saves in ``__exit__`` before it unpatches, so when saving raises (a
    ``SecretInCassetteError``) its patches would stay on httpx/aiohttp until the
    exception is garbage-collected, and leak into whatever runs next.
    """
    context = recorder.use_cassette(name, **kwargs)
    cassette = context.__enter__()
    exc_info: tuple[Any, Any, Any] = (None, None, None)
    try:
        yield cassette
    except BaseException:
        exc_info = sys.exc_info()
        raise
    finally:
        try:
            context.__exit__(*exc_info)
        finally:
            patches = getattr(context, "_CassetteContextDecorator__finish", None)  # vcrpy's patcher generator
            if patches is not None:
                patches.close()


