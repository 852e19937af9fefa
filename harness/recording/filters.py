"""What a request and a response become before a cassette holds them (vcrpy's ``before_record_*`` filters).

Requests to the scripted endpoint (``http://127.0.0.1:PORT`` with a Gemini API path) are rewritten to
``https://generativelanguage.googleapis.com`` so scripted and live cassettes have the same shape and replay needs
no server; secrets are scrubbed: headers, query parameters, key-like JSON fields, and any known value or secret
pattern anywhere (``secret_patterns``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.llm.modes import DUMMY_API_KEYS
from harness.recording.secret_patterns import SECRET_PATTERNS

if TYPE_CHECKING:
    from vcr.request import Request


GEMINI_ORIGIN = "https://generativelanguage.googleapis.com"
SCRUBBED = "<scrubbed>"
SECRET_HEADERS = frozenset({"x-goog-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
                            "x-databricks-token"})
SECRET_QUERY_PARAMS = frozenset({"key", "api_key", "access_token", "token"})
_SECRET_FIELD = re.compile(r"(api_?key|access_?token|refresh_?token|id_?token|client_?secret|secret|password|"
                           r"token|authorization)", re.IGNORECASE)
_LOOPBACK_HOSTS = frozenset({"localhost", "::1"})
_GEMINI_PATH = re.compile(r"/v\d+(?:alpha|beta)?\d*/")


# -- scrubbers (pure functions, vcrpy-style) -------------------------------------------

def rewrite_loopback(request: Request) -> Request:
    """Send a scripted-endpoint request's URI to the public Gemini host (scheme, host and port)."""
    parts = urlsplit(request.uri)
    host = parts.hostname or ""
    if (host in _LOOPBACK_HOSTS or host.startswith("127.")) and _GEMINI_PATH.match(parts.path):
        request.uri = urlunsplit(urlsplit(GEMINI_ORIGIN)[:2] + (parts.path, parts.query, ""))
        if "host" in request.headers:
            request.headers["host"] = urlsplit(GEMINI_ORIGIN).netloc
    return request


def scrub_text(text: str, *, secrets: Sequence[str] = ()) -> str:
    """Replace known secret values and secret-looking strings with ``SCRUBBED``."""
    for value in _longest_first(tuple(secrets)):
        text = text.replace(value, SCRUBBED)
    for pattern in SECRET_PATTERNS.values():
        text = pattern.sub(SCRUBBED, text)
    return text


def could_scrub(text: str, *, secrets: Sequence[str] = ()) -> bool:
    """False when ``scrub_text`` would leave ``text`` as it is (no secret value in it, no pattern matching); true
    otherwise, or where it might. Joined strings can be tested at once: a secret in one of them is in the whole."""
    return any(value in text for value in _longest_first(tuple(secrets))) or \
        any(pattern.search(text) for pattern in SECRET_PATTERNS.values())


@functools.lru_cache(maxsize=64)
def _longest_first(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """The values to replace, longest first (a secret containing another is replaced whole); a run scrubs
    hundreds of strings with the same few secrets."""
    return tuple(value for value in sorted({*secrets, *DUMMY_API_KEYS}, key=len, reverse=True) if value)


def _scrub_json_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: SCRUBBED if _SECRET_FIELD.fullmatch(k.replace("-", "_")) and isinstance(v, str)
                else _scrub_json_fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_json_fields(v) for v in value]
    return value


def _scrub_body(body: Any, *, secrets: Sequence[str], fields: bool) -> Any:
    if not body or not isinstance(body, (bytes, str)):
        return body
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError:  # binary (a pickle, an archive): YAML's !!binary base64 would hide a secret in it
        return _scrub_bytes(body, secrets=secrets)
    try:
        parsed = json.loads(text) if fields else None
    except ValueError:
        parsed = None
    if isinstance(parsed, (dict, list)) and (scrubbed := _scrub_json_fields(parsed)) != parsed:
        text = json.dumps(scrubbed)
    text = scrub_text(text, secrets=secrets)
    return text.encode("utf-8") if isinstance(body, bytes) else text


def latin1_forms(secrets: Sequence[str]) -> list[str]:
    """Each secret's UTF-8 bytes as latin-1 text: how it reads inside bytes decoded as latin-1."""
    return [value.encode("utf-8").decode("latin-1") for value in secrets]


def _scrub_bytes(data: bytes, *, secrets: Sequence[str]) -> bytes:
    """``scrub_text`` on bytes that are not UTF-8 (latin-1 maps each byte to one character and back)."""
    return scrub_text(data.decode("latin-1"), secrets=latin1_forms(secrets)).encode("latin-1")


def scrub_value(value: Any, *, secrets: Sequence[str] = ()) -> Any:
    """``value`` with ``scrub_text`` applied to every string in it, mapping keys included."""
    if isinstance(value, str):
        return scrub_text(value, secrets=secrets)
    if isinstance(value, dict):
        return {scrub_value(k, secrets=secrets): scrub_value(v, secrets=secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_value(v, secrets=secrets) for v in value)
    return value


def scrub_request(request: Request, *, secrets: Sequence[str] = ()) -> Request:
    """``before_record_request``: rewrite loopback, scrub secret headers, query parameters and body."""
    request = rewrite_loopback(request)
    for name in list(request.headers):
        value = request.headers[name]
        request.headers[name] = SCRUBBED if name.lower() in SECRET_HEADERS else scrub_text(str(value), secrets=secrets)
    parts = urlsplit(request.uri)
    original = parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, SCRUBBED if k.lower() in SECRET_QUERY_PARAMS else scrub_text(v, secrets=secrets))
             for k, v in original]
    if query != original:
        request.uri = urlunsplit(parts._replace(query=urlencode(query, safe="<>")))
    request.uri = scrub_text(request.uri, secrets=secrets)
    body = request.body
    request.body = (_scrubbed_request_body(body, tuple(secrets)) if isinstance(body, (bytes, str))
                    else _scrub_body(body, secrets=secrets, fields=True))
    return request


@functools.lru_cache(maxsize=8)
def _scrubbed_request_body(body: bytes | str, secrets: tuple[str, ...]) -> bytes | str:
    """``_scrub_body`` of a request's body, remembered: on replay vcrpy applies ``before_record_request`` to the
    same request each time it matches or plays it (four or five times), and a model request's body is the whole
    prompt. A few entries: the calls for one request come one after another."""
    return _scrub_body(body, secrets=secrets, fields=True)


def scrub_response(response: dict[str, Any], *, secrets: Sequence[str] = ()) -> dict[str, Any]:
    """``before_record_response``: drop secret headers, scrub secret values and patterns in the rest.

    Key-like JSON field names are only scrubbed in requests: in a response they
    may be a model's function-call arguments, which replay must hand back intact.
    """
    headers = response.get("headers") or {}
    response["headers"] = {name: [scrub_text(str(v), secrets=secrets) for v in values]
                           for name, values in headers.items() if name.lower() not in SECRET_HEADERS}
    body = response.get("body") or {}
    scrubbed = _scrub_body(body.get("string"), secrets=secrets, fields=False)
    if "string" in body and scrubbed != body["string"]:
        body["string"] = scrubbed
        for name in response["headers"]:
            if name.lower() == "content-length":
                response["headers"][name] = [str(len(scrubbed))]
    return response


def find_secrets(text: str, *, secrets: Sequence[str] = ()) -> list[tuple[str, int]]:
    """Which secrets are in ``text``, as (description, line number); never the value itself."""
    found = []
    for number, value in enumerate(secrets):
        if value and value in text:
            found.append((f"the value of secrets[{number}]", text[: text.index(value)].count("\n") + 1))
    for name, pattern in SECRET_PATTERNS.items():
        if match := pattern.search(text):
            found.append((f"a {name}", text[: match.start()].count("\n") + 1))
    return found


