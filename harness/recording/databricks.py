"""vcrpy cassettes of Databricks REST traffic: what a workspace's values become in a cassette.

A cassette is written in one shape whatever answered: the fake on
``http://127.0.0.1:PORT`` or a real workspace. ``WorkspaceRewrite`` turns the
real values into fixed placeholders before anything is stored — the origin
into ``PUBLIC_HOST`` (also inside response bodies, e.g. ``run_page_url`` and
the host-metadata ``oidc_endpoint``), and for a real workspace its workspace id
(learnt from the ``/.well-known/databricks-config`` answer), warehouse and
cluster ids, the volume root, the catalog and schema names and user names.
Replay then points a client at ``PUBLIC_HOST`` with the placeholder settings
and needs no server. The LLM cassettes' loopback rewrite only touches Gemini
paths, so these rewrites run first; scrubbing (token headers, secret values),
the matcher and the provenance-first persister are the LLM cassettes'
(``harness.recording``: filters, matchers, persister); the provenance says ``recorded_against:
databricks-fake`` (or ``databricks-live``), so a cassette recorded against
the fake can never pass for one recorded against a real workspace.

``EXTERNAL_LINKS`` results (large SQL results) are fetched from presigned
cloud-storage URLs, which carry a credential: each ``external_link`` seen in a
response becomes ``LINKS_HOST/chunk-<n>-<hash of its path>`` (learnt there, so
the download that follows is recorded under the same placeholder), and the
values of its ``http_headers`` and of the download's headers become
``<scrubbed>``. Replay then fetches the placeholder from the cassette.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..databricks_fake.server import FAKE_WORKSPACE_ID
from .filters import SCRUBBED, scrub_request, scrub_response
from .persister import Provenance
from .recorder import make_vcr

if TYPE_CHECKING:
    import vcr
    from vcr.request import Request

PUBLIC_HOST = "https://fake-workspace.cloud.databricks.com"
LINKS_HOST = "https://result-links.fake-storage.invalid"  # EXTERNAL_LINKS downloads (presigned URLs) in cassettes
RECORDED_AGAINST = "databricks-fake"
RECORDED_AGAINST_LIVE = "databricks-live"
API_LABEL = "databricks-rest (no model)"
PLACEHOLDER_USER = "user@example.com"
# Response fields that name a person (a real workspace fills them in runs/get); their values become PLACEHOLDER_USER.
USER_FIELDS = frozenset({"creator_user_name", "run_as_user_name", "user_name", "owner", "created_by"})
# Headers that only add churn to a cassette (client versions, a clock, the server's name): not stored.
NOISE_REQUEST_HEADERS = frozenset({"accept", "accept-encoding", "connection", "content-length", "user-agent"})
NOISE_RESPONSE_HEADERS = frozenset({"date", "server"})


class WorkspaceRewrite:
    """Real workspace values -> cassette placeholders, for requests (also when replay matches them) and responses.

    ``pairs`` are (real, placeholder) strings replaced everywhere (URI, bodies, headers), longest first;
    ``request_fields`` are top-level JSON fields of request bodies set to a placeholder when present
    (the SQL statements' ``catalog`` and ``schema``).
    """

    def __init__(self, pairs: Iterable[tuple[str, str]] = (), *, request_fields: Mapping[str, str] | None = None,
                 learn_workspace_id: bool = False) -> None:
        self.pairs: dict[str, str] = {}
        for real, placeholder in pairs:
            self.add(real, placeholder)
        self.request_fields = dict(request_fields or {})
        self.learn_workspace_id = learn_workspace_id
        self.public_hosts = {PUBLIC_HOST}

    @classmethod
    def for_origin(cls, origin: str, public_host: str = PUBLIC_HOST) -> WorkspaceRewrite:
        """The fake at ``origin`` (``http://127.0.0.1:PORT``) stored as ``public_host``."""
        rewrite = cls([(origin.rstrip("/"), public_host)] if origin and origin != public_host else [])
        rewrite.public_hosts.add(public_host)
        return rewrite

    def add(self, real: str | None, placeholder: str) -> None:
        if real and real != placeholder:
            self.pairs[real] = placeholder

    # --- text ---------------------------------------------------------------------------

    def text(self, value: str) -> str:
        for real in sorted(self.pairs, key=len, reverse=True):
            value = value.replace(real, self.pairs[real])
        return value

    def _body(self, body: Any) -> Any:
        if isinstance(body, bytes):
            if not self.pairs:
                return body
            for real in sorted(self.pairs, key=len, reverse=True):
                body = body.replace(real.encode(), self.pairs[real].encode())
            return body
        if isinstance(body, str):
            return self.text(body)
        return body

    # --- vcrpy hooks ----------------------------------------------------------------------

    def request(self, request: Request) -> Request:
        if getattr(request, "_was_file", False) or getattr(request, "_was_iter", False):
            # A Files API upload streams its body: keep it as bytes (this is vcrpy's copy of the request), so
            # the scrubbers after this one can read and set it (vcrpy cannot set a stream back).
            raw = request.body_bytes
            request._was_file = request._was_iter = False
            request.body = raw
        request.uri = self.text(request.uri)
        body = self._body(request.body)
        if self.request_fields and body:
            body = _set_fields(body, self.request_fields)
        request.body = body
        workspace = request.uri.startswith((*self.public_hosts, LINKS_HOST))
        link = request.uri.startswith(LINKS_HOST)
        for name in list(request.headers):
            if workspace and name.lower() in NOISE_REQUEST_HEADERS:
                del request.headers[name]
            elif link:  # the link's http_headers (e.g. a decryption key) are credentials
                request.headers[name] = SCRUBBED
            elif isinstance(request.headers[name], str):
                request.headers[name] = self.text(request.headers[name])
        return request

    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        body = response.get("body") or {}
        data = body.get("string")
        if self.learn_workspace_id:
            self._learn(data, response.get("headers") or {})
        if isinstance(data, (bytes, str)):
            data = _scrub_links(self._learn_links(data))
            data = _scrub_user_fields(self._body(data))
            if data != body["string"]:
                body["string"] = data
        headers = response.get("headers") or {}
        for name in list(headers):
            values = headers[name]
            if name.lower() in NOISE_RESPONSE_HEADERS:
                del headers[name]
            elif name.lower() == "content-length" and isinstance(body.get("string"), (bytes, str)):
                headers[name] = [str(len(body["string"]))]
            elif isinstance(values, list):
                headers[name] = [self.text(v) if isinstance(v, str) else v for v in values]
        return response

    def _learn(self, data: Any, headers: Mapping[str, Any]) -> None:
        """The real workspace id (host metadata, the org-id header) becomes FAKE_WORKSPACE_ID from now on."""
        for name, values in headers.items():
            if name.lower() == "x-databricks-org-id" and values:
                self.add(str(values[0] if isinstance(values, list) else values), FAKE_WORKSPACE_ID)
        parsed = _json(data)
        if isinstance(parsed, dict) and "oidc_endpoint" in parsed and parsed.get("workspace_id"):
            self.add(str(parsed["workspace_id"]), FAKE_WORKSPACE_ID)


    def _learn_links(self, data: Any) -> Any:
        """Each presigned ``external_link`` in a SQL result becomes a placeholder, from now on (its download too)."""
        if b"external_link" not in (data if isinstance(data, bytes) else data.encode("utf-8", "replace")):
            return data
        parsed = _json(data)
        result = parsed.get("result", parsed) if isinstance(parsed, dict) else None
        for link in (result.get("external_links") or []) if isinstance(result, dict) else []:
            url = link.get("external_link") if isinstance(link, dict) else None
            if isinstance(url, str) and url and not url.startswith(LINKS_HOST):
                digest = hashlib.sha256(urlsplit(url).path.encode("utf-8")).hexdigest()[:12]
                self.add(url, f"{LINKS_HOST}/chunk-{link.get('chunk_index', 0)}-{digest}")
        return data


def _scrub_links(body: Any) -> Any:
    """The values of every external link's ``http_headers`` (credentials such as decryption keys)."""
    parsed = _json(body) if isinstance(body, (bytes, str)) and b"http_headers" in (
        body if isinstance(body, bytes) else body.encode("utf-8", "replace")) else None
    result = parsed.get("result", parsed) if isinstance(parsed, dict) else None
    links = result.get("external_links") if isinstance(result, dict) else None
    if not isinstance(links, list) or not any(isinstance(x, dict) and x.get("http_headers") for x in links):
        return body
    for link in links:
        if isinstance(link, dict) and isinstance(link.get("http_headers"), dict):
            link["http_headers"] = {name: SCRUBBED for name in link["http_headers"]}
    text = json.dumps(parsed)
    return text.encode("utf-8") if isinstance(body, bytes) else text


def _json(data: Any) -> Any:
    if not isinstance(data, (bytes, str)) or not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def _set_fields(body: Any, fields: Mapping[str, str]) -> Any:
    parsed = _json(body)
    if not isinstance(parsed, dict) or not any(k in parsed for k in fields):
        return body
    text = json.dumps({k: fields[k] if k in fields and isinstance(v, str) else v for k, v in parsed.items()})
    return text.encode("utf-8") if isinstance(body, bytes) else text


def _scrub_user_fields(body: Any) -> Any:
    parsed = _json(body)
    if not isinstance(parsed, (dict, list)):
        return body
    changed = False

    def walk(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in USER_FIELDS and isinstance(v, str) and v != PLACEHOLDER_USER:
                    out[k], changed = PLACEHOLDER_USER, True
                else:
                    out[k] = walk(v)
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    scrubbed = walk(parsed)
    if not changed:
        return body
    text = json.dumps(scrubbed)
    return text.encode("utf-8") if isinstance(body, bytes) else text


def _rewrite_request(request: Request, *, rewrite: WorkspaceRewrite, secrets: tuple[str, ...]) -> Request:
    return scrub_request(rewrite.request(request), secrets=secrets)


def _rewrite_response(response: dict[str, Any], *, rewrite: WorkspaceRewrite,
                      secrets: tuple[str, ...]) -> dict[str, Any]:
    return scrub_response(rewrite.response(response), secrets=secrets)


def public_netloc(host: str = PUBLIC_HOST) -> str:
    return urlsplit(host).netloc


def make_workspace_vcr(*, cassette_dir: str | os.PathLike[str], record_mode: str, fake_origin: str,
                       secrets: Iterable[str] = ()) -> vcr.VCR:
    """A ``vcr.VCR`` for REST traffic to the fake at ``fake_origin`` (its ``.host``), stored as ``PUBLIC_HOST``.

    For replay (``record_mode="none"``) ``fake_origin`` is not contacted; pass the
    recorded one or ``PUBLIC_HOST``.
    """
    known = tuple(s for s in secrets if s)
    provenance = Provenance(recorded_against=RECORDED_AGAINST, model=API_LABEL)
    recorder = make_vcr(cassette_dir=cassette_dir, record_mode=record_mode, provenance=provenance, secrets=known)
    rewrite = WorkspaceRewrite.for_origin(fake_origin)
    recorder.before_record_request = functools.partial(_rewrite_request, rewrite=rewrite, secrets=known)
    recorder.before_record_response = functools.partial(_rewrite_response, rewrite=rewrite, secrets=known)
    return recorder
