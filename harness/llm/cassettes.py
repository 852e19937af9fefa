"""vcrpy configuration for LLM record/replay: matcher, scrubbers, a guarded persister, play checks.

A cassette is vcrpy's YAML with a ``metadata.provenance`` block written first::

    metadata:
      provenance:
        model: gemini-2.5-flash
        recorded_against: scripted
        recorded_at: '2026-11-22'
        tool: rlm-conformance
    interactions:
    - request: ...
    version: 1

vcrpy (9.4+) loads ``metadata`` itself, so the file stays an ordinary cassette.

Record time, in order: requests to the scripted endpoint (``http://127.0.0.1:PORT``
with a Gemini API path) are rewritten to ``https://generativelanguage.googleapis.com``
so scripted and live cassettes have the same shape and replay needs no server;
secrets are scrubbed (headers, query parameters, key-like JSON fields, and any
known value or secret pattern anywhere); then the persister serializes, refuses
to write if a secret is still in the text, and writes atomically.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.errors import CassetteError, SecretInCassetteError
from harness.llm.modes import DUMMY_API_KEYS

if TYPE_CHECKING:
    import vcr
    from vcr.cassette import Cassette
    from vcr.errors import CannotOverwriteExistingCassetteException
    from vcr.request import Request

MATCH_ON = ("method_ci", "scheme", "host", "port", "path", "query")
GEMINI_ORIGIN = "https://generativelanguage.googleapis.com"
SCRUBBED = "<scrubbed>"
TOOL_NAME = "rlm-conformance"

SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "Google API key (AIza...)": re.compile(r"AIza[0-9A-Za-z_-]{30,}"),
    "Databricks token (dapi...)": re.compile(r"dapi[0-9a-f]{32}"),
    "bearer token (Bearer ...)": re.compile(r"Bearer\s+[A-Za-z0-9._~+/=-]{20,}"),
}
SECRET_HEADERS = frozenset({"x-goog-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
                            "x-databricks-token"})
SECRET_QUERY_PARAMS = frozenset({"key", "api_key", "access_token", "token"})
_SECRET_FIELD = re.compile(r"(api_?key|access_?token|refresh_?token|id_?token|client_?secret|secret|password|"
                           r"token|authorization)", re.IGNORECASE)
_LOOPBACK_HOSTS = frozenset({"localhost", "::1"})
_GEMINI_PATH = re.compile(r"/v\d+(?:alpha|beta)?\d*/")


@dataclass(frozen=True)
class Provenance:
    """What a cassette was recorded against; ``recorded_at`` (ISO date) is filled in when saved."""

    recorded_against: Literal["scripted", "live", "databricks-fake", "databricks-live"]
    model: str
    recorded_at: str | None = None
    tool: str = TOOL_NAME

    def stamped(self) -> Provenance:
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        return self if self.recorded_at else replace(self, recorded_at=today)


# -- matcher ---------------------------------------------------------------------

def method_ci(r1: Request, r2: Request) -> None:
    """vcrpy matcher: HTTP methods equal ignoring case (aiohttp records ``post``, httpx ``POST``)."""
    if r1.method.upper() != r2.method.upper():
        raise AssertionError(f"{r1.method} != {r2.method} (compared case-insensitively)")


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
    for value in sorted({*secrets, *DUMMY_API_KEYS}, key=len, reverse=True):
        if value:
            text = text.replace(value, SCRUBBED)
    for pattern in SECRET_PATTERNS.values():
        text = pattern.sub(SCRUBBED, text)
    return text


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
    except UnicodeDecodeError:
        return body
    try:
        parsed = json.loads(text) if fields else None
    except ValueError:
        parsed = None
    if isinstance(parsed, (dict, list)) and (scrubbed := _scrub_json_fields(parsed)) != parsed:
        text = json.dumps(scrubbed)
    text = scrub_text(text, secrets=secrets)
    return text.encode("utf-8") if isinstance(body, bytes) else text


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
    request.body = _scrub_body(request.body, secrets=secrets, fields=True)
    return request


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


# -- persister ----------------------------------------------------------------------

class CassettePersister:
    """vcrpy persister: provenance block first, refuses to save secrets, writes atomically."""

    def __init__(self, *, provenance: Provenance, secrets: Sequence[str] = ()) -> None:
        self.provenance = provenance
        self.secrets = tuple(secrets)

    @staticmethod
    def load_cassette(cassette_path: str | os.PathLike[str], serializer: Any) -> Any:
        from vcr.persisters.filesystem import FilesystemPersister

        return FilesystemPersister.load_cassette(cassette_path, serializer)

    def save_cassette(self, cassette_path: str | os.PathLike[str], cassette_dict: dict[str, Any],
                      serializer: Any) -> None:
        from vcr.serialize import serialize
        from vcr.serializers import yamlserializer

        path = Path(cassette_path)
        metadata = {**(cassette_dict.get("metadata") or {}), "provenance": asdict(self.provenance.stamped())}
        interactions = {"requests": cassette_dict["requests"], "responses": cassette_dict["responses"]}
        if serializer is yamlserializer:  # two block mappings in a row are one mapping: provenance reads first
            text = serializer.serialize({"metadata": metadata}) + serialize(interactions, serializer)
        else:
            text = serialize({**interactions, "metadata": metadata}, serializer)
        found = [(name, f"on line {line}") for name, line in find_secrets(text, secrets=self.secrets)] or [
            (name, "folded across lines") for name, _ in find_secrets(" ".join(text.split()), secrets=self.secrets)]
        if found:
            what = "; ".join(f"{name} {where}" for name, where in found)
            raise SecretInCassetteError(
                f"Refused to save cassette {path}: after scrubbing it still contains {what}. Nothing was "
                f"written. Scrub it at record time: add the header, query parameter or JSON field to "
                f"SECRET_HEADERS / SECRET_QUERY_PARAMS / _SECRET_FIELD in harness/llm/cassettes.py, or pass "
                f"the value in make_vcr(secrets=[...]).")
        _write_atomically(path, text)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)  # mkstemp makes 0600; a cassette is a reviewable repo file
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_provenance(cassette_path: str | os.PathLike[str]) -> Provenance | None:
    """The provenance block of a cassette file, or None if it has none."""
    from vcr.serializers import yamlserializer

    data = yamlserializer.deserialize(Path(cassette_path).read_text(encoding="utf-8"))
    block = (data.get("metadata") or {}).get("provenance")
    return Provenance(**block) if block else None


# -- the VCR ---------------------------------------------------------------------------

def make_vcr(*, cassette_dir: str | os.PathLike[str], record_mode: str, provenance: Provenance,
             secrets: Iterable[str] = (), record_on_exception: bool = False) -> vcr.VCR:
    """A ``vcr.VCR`` for LLM cassettes (``NAME.yaml`` under ``cassette_dir``).

    ``record_mode`` is vcrpy's (``none`` replays only). ``secrets`` are values that
    must never reach a cassette. A run that raises saves nothing unless
    ``record_on_exception``.
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
    )
    recorder.register_matcher("method_ci", method_ci)
    recorder.register_persister(CassettePersister(provenance=provenance, secrets=known))
    return recorder


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


# -- after a run -------------------------------------------------------------------------

def assert_all_played(cassette: Cassette, *, scenario: str, rerecord_command: str) -> None:
    """Raise ``CassetteError`` listing every interaction loaded from the file that was never played."""
    from vcr.record_mode import RecordMode

    if cassette.record_mode == RecordMode.ALL or not cassette.rewound:
        return  # everything was (re)recorded in this run; there is nothing to have played
    loaded = getattr(cassette, "_loaded_count", len(cassette))  # new_episodes appends after the loaded ones
    unplayed = [(index, request) for index, request in enumerate(cassette.requests[:loaded])
                if not cassette.play_counts[index]]
    if not unplayed:
        return
    listing = "\n".join(f"  #{index}: {request.method.upper()} {request.path}" for index, request in unplayed)
    raise CassetteError(
        f"Scenario {scenario!r}: {len(unplayed)} of {loaded} interactions in cassette {cassette.path} were "
        f"never played:\n{listing}\nThe run made fewer model calls than when it was recorded (the script, "
        f"the prompts or the agent changed). Re-record the cassette with: {rerecord_command}")


def explain_cassette_miss(exc: CannotOverwriteExistingCassetteException, *, scenario: str, agent_hint: str,
                          call_index: int, rerecord_command: str) -> CassetteError:
    """One paragraph for a request replay could not answer; ``raise explain_cassette_miss(...) from exc``."""
    cassette, request = exc.cassette, exc.failed_request
    asked = f"{request.method.upper()} {request.path}" if request is not None else "a request"
    reason = getattr(exc, "reason", "no_match")
    if reason == "cassette_not_found":
        why = "the cassette file does not exist"
    elif reason == "already_played":
        why = ("every matching recorded interaction was already played, so the run made more model calls than "
               "when it was recorded")
    elif reason == "no_match" and exc.similar_requests:
        differences = "; ".join(f"{name}: {' '.join(str(message).split())}"
                                for name, message in exc.similar_requests[0][2])
        why = f"no recorded interaction matches it (the closest differs in {differences})"
    else:
        why = "the cassette has nothing like it"
    return CassetteError(
        f"Scenario {scenario!r}: model call #{call_index} of {agent_hint} ({asked}) is not in cassette "
        f"{cassette.path}: {why} ({len(cassette)} interactions recorded, {len(cassette.play_counts)} played). "
        f"CI only replays and never records; if the change is intended, re-record with: {rerecord_command}")
