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

Requests to the harness's model gateway (``pass_by``) are no cassette's: the gateway forwards each one, and
the forwarded request is the one recorded and played. Recording both would hold every in-process call twice.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.errors import CassetteError, CassetteIdentityError, SecretInCassetteError
from harness.files import write_atomic
from harness.llm.identity import METADATA_KEY as IDENTITY_KEY
from harness.llm.identity import CassetteIdentity
from harness.llm.modes import DUMMY_API_KEYS
from harness.llm.secret_patterns import SECRET_PATTERNS

if TYPE_CHECKING:
    import vcr
    from vcr.cassette import Cassette
    from vcr.errors import CannotOverwriteExistingCassetteException
    from vcr.request import Request

MATCH_ON = ("method_ci", "scheme", "host", "port", "path", "query")
GEMINI_ORIGIN = "https://generativelanguage.googleapis.com"
SCRUBBED = "<scrubbed>"
TOOL_NAME = "rlm-conformance"

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


def _latin1(secrets: Sequence[str]) -> list[str]:
    """Each secret's UTF-8 bytes as latin-1 text: how it reads inside bytes decoded as latin-1."""
    return [value.encode("utf-8").decode("latin-1") for value in secrets]


def _scrub_bytes(data: bytes, *, secrets: Sequence[str]) -> bytes:
    """``scrub_text`` on bytes that are not UTF-8 (latin-1 maps each byte to one character and back)."""
    return scrub_text(data.decode("latin-1"), secrets=_latin1(secrets)).encode("latin-1")


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


# -- persister ----------------------------------------------------------------------

class CassettePersister:
    """vcrpy persister: provenance block first, refuses to save secrets, writes atomically."""

    def __init__(self, *, provenance: Provenance, secrets: Sequence[str] = (), replace_broken: bool = False,
                 rerecord: str | None = None, identity: CassetteIdentity | None = None) -> None:
        self.provenance = provenance
        self.secrets = tuple(secrets)
        self.replace_broken = replace_broken  # record mode 'all': a broken old file is about to be replaced
        self.rerecord = rerecord
        self.identity = identity  # written when saving; on replay a cassette of another identity is refused

    def load_cassette(self, cassette_path: str | os.PathLike[str], serializer: Any) -> Any:
        """vcrpy's loading, but a file that exists and cannot be used is a ``CassetteError`` naming it.

        vcrpy itself treats an undecodable file as empty (replay then misses every
        call) and lets YAML or key errors escape as tracebacks. A missing or blank
        file stays vcrpy's "not found" (nothing recorded yet).
        """
        from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
        from vcr.serialize import deserialize

        path = Path(cassette_path)
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            return self._broken(path, f"cannot be read as UTF-8 text ({exc})", exc)
        if not text.strip():
            return FilesystemPersister.load_cassette(path, serializer)  # raises CassetteNotFoundError
        try:
            data = serializer.deserialize(text)
            problem = _cassette_problem(data)
            if problem is None and self.identity is not None and not self.replace_broken:
                metadata = data.get("metadata") or {}
                if (mismatch := self.identity.mismatch(metadata.get(IDENTITY_KEY))) is not None:
                    raise CassetteIdentityError(f"Cassette {path} {mismatch}. Re-record it with: "
                                                f"{self.rerecord or 'rlm-conformance record'}")
            if problem is None:
                return deserialize(text, _Parsed(data))  # vcrpy's own reading of it, without parsing it again
        except CassetteIdentityError:
            raise
        except CassetteNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - YAML errors, vcrpy's own checks, deep nesting: all mean broken
            mark, position = getattr(exc, "problem_mark", None), getattr(exc, "position", None)
            line = mark.line + 1 if mark is not None else (
                text.count("\n", 0, position) + 1 if isinstance(position, int) else None)
            where = f" (line {line})" if line is not None else ""
            reason = " ".join(str(getattr(exc, "problem", None) or exc).split())[:200] or type(exc).__name__
            return self._broken(path, f"is not a readable vcrpy cassette{where}: {reason}", exc)
        return self._broken(path, problem, None)

    def _broken(self, path: Path, problem: str, cause: BaseException | None) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        if self.replace_broken:
            raise CassetteNotFoundError() from cause
        how = f"re-record it with: {self.rerecord}" if self.rerecord else "re-record it"
        raise CassetteError(f"Cassette {path} {problem}. The file is damaged or was edited by hand; {how}") from cause

    def save_cassette(self, cassette_path: str | os.PathLike[str], cassette_dict: dict[str, Any],
                      serializer: Any) -> None:
        from vcr.serialize import serialize
        from vcr.serializers import yamlserializer

        path = Path(cassette_path)
        metadata = {**(cassette_dict.get("metadata") or {}), "provenance": asdict(self.provenance.stamped())}
        if self.identity is not None:
            metadata[IDENTITY_KEY] = self.identity.as_metadata()
        interactions = {"requests": cassette_dict["requests"], "responses": cassette_dict["responses"]}
        if serializer is yamlserializer:  # two block mappings in a row are one mapping: provenance reads first
            text = serializer.serialize({"metadata": metadata}) + serialize(interactions, serializer)
        else:
            text = serialize({**interactions, "metadata": metadata}, serializer)
        found = [(name, f"on line {line}") for name, line in find_secrets(text, secrets=self.secrets)] or [
            (name, "folded across lines") for name, _ in find_secrets(" ".join(text.split()), secrets=self.secrets)]
        found += _binary_secrets(interactions, self.secrets)
        if found:
            what = "; ".join(f"{name} {where}" for name, where in found)
            raise SecretInCassetteError(
                f"Refused to save cassette {path}: after scrubbing it still contains {what}. Nothing was "
                f"written. Scrub it at record time: add the header, query parameter or JSON field to "
                f"SECRET_HEADERS / SECRET_QUERY_PARAMS / _SECRET_FIELD in harness/llm/cassettes.py, or pass "
                f"the value in make_vcr(secrets=[...]).")
        _write_atomically(path, text)


class _Parsed:
    """A serializer handing vcrpy's ``deserialize`` the data already parsed from the text: a cassette's YAML is
    parsed once (~4-8 ms a scenario), not once to check it and again to load it."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def deserialize(self, _text: str) -> Any:
        return self.data


def _cassette_problem(data: Any) -> str | None:
    """What makes deserialized cassette data unusable for replay, naming the field; None when it is fine."""
    def kind(value: Any) -> str:
        return "nothing" if value is None else f"{type(value).__name__} {str(value)[:40]!r}"

    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        got = kind(data.get("interactions")) if isinstance(data, dict) else kind(data)
        return f"has no list at field 'interactions' (got {got})"
    if not isinstance(data.get("metadata") or {}, dict):
        return f"has field 'metadata' that is not a mapping (got {kind(data['metadata'])})"
    for number, interaction in enumerate(data["interactions"]):
        at = f"interactions[{number}]"
        if not isinstance(interaction, dict):
            return f"has field '{at}' that is not a mapping (got {kind(interaction)})"
        request, response = interaction.get("request"), interaction.get("response")
        if not isinstance(request, dict) or set(request) != {"method", "uri", "body", "headers"}:
            return (f"has field '{at}.request' that is not a mapping of exactly method, uri, body and headers "
                    f"(got {sorted(request) if isinstance(request, dict) else kind(request)})")
        if not isinstance(request["method"], str) or not request["method"].isalpha():
            return f"has field '{at}.request.method' that is not an HTTP method (got {kind(request['method'])})"
        try:
            uri = urlsplit(request["uri"]) if isinstance(request["uri"], str) else None
            bad_uri = uri is None or not uri.scheme or not uri.hostname or (uri.port is not None and uri.port < 0)
        except ValueError:
            bad_uri = True
        if bad_uri:
            return f"has field '{at}.request.uri' that is not an absolute URL (got {kind(request['uri'])})"
        if request["body"] is not None and not isinstance(request["body"], (str, bytes)):
            return f"has field '{at}.request.body' that is not text (got {kind(request['body'])})"
        if problem := _headers_problem(request["headers"], f"{at}.request.headers", allow_text=True):
            return problem
        if not isinstance(response, dict):
            return f"has field '{at}.response' that is not a mapping (got {kind(response)})"
        status, body = response.get("status"), response.get("body")
        code = status.get("code") if isinstance(status, dict) else None
        if type(code) is not int or not 100 <= code <= 599:
            return f"has field '{at}.response.status.code' that is not an HTTP status 100-599 (got {kind(code)})"
        if not isinstance(status.get("message"), str):
            return f"has field '{at}.response.status.message' that is not text (got {kind(status.get('message'))})"
        if problem := _headers_problem(response.get("headers"), f"{at}.response.headers", allow_text=False):
            return problem
        if not isinstance(body, dict) or not isinstance(body.get("string"), (str, bytes)):
            got = kind(body.get("string")) if isinstance(body, dict) else kind(body)
            return f"has field '{at}.response.body.string' that is not text (got {got})"
    return None


def _headers_problem(headers: Any, at: str, *, allow_text: bool) -> str | None:
    if not isinstance(headers, dict):
        return f"has field '{at}' that is not a mapping of header names to lists of values"
    for name, values in headers.items():
        texts = [values] if allow_text and isinstance(values, str) else values
        if (not isinstance(name, str) or not isinstance(texts, list) or not all(isinstance(v, str) for v in texts)
                or (allow_text and not texts)):  # vcrpy's request keeps a header's first value
            return f"has field '{at}' whose header {str(name)[:40]!r} is not a list of text values"
    return None


def _binary_secrets(interactions: dict[str, Any], secrets: Sequence[str]) -> list[tuple[str, str]]:
    """Secrets inside bodies that are not UTF-8, which the YAML holds as base64 (``!!binary``)."""
    bodies = [(f"interaction {n} request body", getattr(r, "body", None))
              for n, r in enumerate(interactions["requests"])]
    bodies += [(f"interaction {n} response body", ((r or {}).get("body") or {}).get("string"))
               for n, r in enumerate(interactions["responses"])]
    found = []
    for where, body in bodies:
        if isinstance(body, bytes):
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:
                text = body.decode("latin-1")
                found += [(name, f"in the binary {where}") for name, _ in find_secrets(text, secrets=_latin1(secrets))]
    return found


def _write_atomically(path: Path, text: str) -> None:
    # 0644: mkstemp makes 0600, and a cassette is a reviewable repo file.
    write_atomic(path, text.encode("utf-8"), mode=0o644, durable=True)


def read_provenance(cassette_path: str | os.PathLike[str]) -> Provenance | None:
    """The provenance block of a cassette file, or None if it has none."""
    from vcr.serializers import yamlserializer

    data = yamlserializer.deserialize(Path(cassette_path).read_text(encoding="utf-8"))
    block = (data.get("metadata") or {}).get("provenance")
    return Provenance(**block) if block else None


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
