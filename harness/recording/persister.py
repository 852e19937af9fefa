"""The cassette persister: provenance first, validated on load, refused when a secret is left, written atomically.

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
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from harness.errors import CassetteError, CassetteIdentityError, SecretInCassetteError
from harness.files import write_atomic
from harness.recording.identity import METADATA_KEY as IDENTITY_KEY
from harness.recording.identity import CassetteIdentity

from .filters import find_secrets, latin1_forms

if TYPE_CHECKING:
    pass


TOOL_NAME = "rlm-conformance"


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
                f"SECRET_HEADERS / SECRET_QUERY_PARAMS / _SECRET_FIELD in harness/recording/filters.py, or pass "
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
                found += [(name, f"in the binary {where}") for name, _ in find_secrets(text, secrets=latin1_forms(secrets))]
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


