"""vcrpy cassettes of Databricks REST traffic recorded against the fake workspace.

The LLM cassettes' loopback rewrite only touches Gemini paths, so requests to
the fake (``http://127.0.0.1:PORT``) are rewritten here to ``PUBLIC_HOST``
(also inside response bodies, e.g. ``run_page_url`` and the host-metadata
``oidc_endpoint``). Replay then points the client at ``PUBLIC_HOST`` and needs
no server. Scrubbing, the matcher and the provenance-first persister are the
LLM cassettes' (``harness.llm.cassettes``); the provenance says
``recorded_against: databricks-fake``, so a cassette recorded against the fake
can never pass for one recorded against a real workspace.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness.llm.cassettes import Provenance, make_vcr, scrub_request, scrub_response

if TYPE_CHECKING:
    import vcr
    from vcr.request import Request

PUBLIC_HOST = "https://fake-workspace.cloud.databricks.com"
RECORDED_AGAINST = "databricks-fake"
API_LABEL = "databricks-rest (no model)"


def _rewrite_request(request: Request, *, origin: str, secrets: tuple[str, ...]) -> Request:
    if request.uri.startswith(origin):
        request.uri = PUBLIC_HOST + request.uri[len(origin):]
    return scrub_request(request, secrets=secrets)


def _rewrite_response(response: dict[str, Any], *, origin: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    body = response.get("body") or {}
    data = body.get("string")
    if isinstance(data, bytes) and origin.encode() in data:
        body["string"] = data.replace(origin.encode(), PUBLIC_HOST.encode())
    elif isinstance(data, str) and origin in data:
        body["string"] = data.replace(origin, PUBLIC_HOST)
    for name in list(response.get("headers") or {}):
        if name.lower() == "content-length" and isinstance(body.get("string"), (bytes, str)):
            response["headers"][name] = [str(len(body["string"]))]
    return scrub_response(response, secrets=secrets)


def make_workspace_vcr(*, cassette_dir: str | os.PathLike[str], record_mode: str, fake_origin: str,
                       secrets: Iterable[str] = ()) -> vcr.VCR:
    """A ``vcr.VCR`` for REST traffic to the fake at ``fake_origin`` (its ``.host``), stored as ``PUBLIC_HOST``.

    For replay (``record_mode="none"``) ``fake_origin`` is not contacted; pass the
    recorded one or ``PUBLIC_HOST``.
    """
    known = tuple(s for s in secrets if s)
    # Provenance.recorded_against is typed "scripted" | "live" for model cassettes; this one is neither.
    provenance = Provenance(recorded_against=RECORDED_AGAINST, model=API_LABEL)
    recorder = make_vcr(cassette_dir=cassette_dir, record_mode=record_mode, provenance=provenance, secrets=known)
    recorder.before_record_request = functools.partial(_rewrite_request, origin=fake_origin, secrets=known)
    recorder.before_record_response = functools.partial(_rewrite_response, origin=fake_origin, secrets=known)
    return recorder
