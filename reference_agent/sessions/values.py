"""What a persisted state value may be: JSON-native data, checked before anything is written.

Both engines keep state as JSON text. A value JSON cannot hold exactly would come back as something else
(a set or tuple as a list, bytes or a datetime as a string, an object as its repr) while the caller's live
session keeps the original — two views of one key. So such values are refused, naming the key (the full
path for nested values) and the type, before the first statement runs.

Allowed: ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` and ``dict`` with ``str`` keys, nested.
NaN and ±inf are refused too: ``json`` writes them as ``NaN``/``Infinity``, which is not JSON and which
other readers of the tables (Spark's JSON functions, ``json.loads`` elsewhere) reject or turn into null.
So are, each naming its key path: a container that contains itself (a cycle), nesting deeper than
``MAX_DEPTH``, a str or key holding a lone surrogate (UTF-8 cannot hold it: the engine would refuse the
statement), an int too long for Python to write as text. Whatever still fails in the JSON encoder is turned
into the same error by the service (``refused_value``).
``temp:`` keys are never persisted, so they may hold anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

TEMP_PREFIX = "temp:"
# Containers nested in a value, at most: deeper is refused (pydantic's serializer, which writes the JSON, stops at
# 254 levels and Python's json near the recursion limit; real state nests a handful).
MAX_DEPTH = 100
_INT_BITS_CHECKED = 4000  # below ~14,000 bits (4,300 digits) every int converts to text
_HINTS = {
    "set": "store a sorted list",
    "frozenset": "store a sorted list",
    "tuple": "store a list",
    "bytes": "store text (decode it) or base64 text",
    "bytearray": "store text (decode it) or base64 text",
    "datetime": "store an ISO 8601 string or epoch seconds",
    "date": "store an ISO 8601 string",
    "time": "store an ISO 8601 string",
    "Decimal": "store a str or a float",
}


def _a(kind: str) -> str:
    return ("an " if kind[:1].lower() in "aeiou" else "a ") + kind


class StateValueError(TypeError):
    """A state value is not JSON-native; the message names the key path, the type and the fix."""

    def __init__(self, path: str, value: Any, problem: str | None = None) -> None:
        kind = type(value).__name__
        problem = problem or f"is {_a(kind)}, which JSON does not hold as it is"
        hint = _HINTS.get(kind) or ("convert it to JSON data first (e.g. a pydantic model's .model_dump(mode='json'))"
                                    if problem.endswith("as it is") else "")
        super().__init__(f"{path} {problem}; {hint + '; ' if hint else ''}session state and events are stored as "
                         "JSON (dict with str keys, list, str, int, finite float, bool, None). Nothing was written.")
        self.path = path


def check_storable(delta: Mapping[str, Any], *, name: str = "state") -> None:
    """Raise ``StateValueError`` for the first value of ``delta`` (``temp:`` keys aside) JSON cannot hold."""
    for key, value in delta.items():
        if not isinstance(key, str):
            raise StateValueError(f"{name} key {key!r}", key, f"is {_a(type(key).__name__)}, not a str")
        if not key.startswith(TEMP_PREFIX) and not (key.isascii() and _plainly_storable(value)):
            _check_text(key, f"{name} key {key!r}")
            _check(value, f"{name}[{key!r}]", 0, set())


def _plainly_storable(value: Any) -> bool:
    """True only for values ``_check`` accepts, checked without building a path for every item (the common
    case: ASCII text, small ints, finite floats, plain lists and dicts); False sends the value to ``_check``,
    which finds what is wrong, or passes what this does not try (a subclass, non-ASCII text)."""
    level, depth = [value], 0
    while level:  # level by level: a whole list or dict's items go on the next in one call
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                if not item.isascii():
                    return False
            elif kind is int:
                if item.bit_length() > _INT_BITS_CHECKED:
                    return False
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind is list or kind is dict:
                if depth >= MAX_DEPTH:  # a cycle ends here too
                    return False
                if kind is dict:
                    for key in item:
                        if type(key) is not str or not key.isascii():
                            return False
                    below.extend(item.values())
                else:
                    below.extend(item)
            elif item is not None and kind is not bool:
                return False
        level, depth = below, depth + 1
    return True


def unencodable_text(value: Any, path: str) -> tuple[str, str] | None:
    """(path, problem) of the first str (or dict key) in JSON data ``value`` that UTF-8 cannot hold, else None."""
    if isinstance(value, str):
        return None if _utf8(value) is None else (path, _utf8(value))  # type: ignore[return-value]
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = unencodable_text(item, f"{path}[{index}]")
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _utf8(key) is not None:
                return f"{path} key {key!r}", _utf8(key)  # type: ignore[return-value]
            found = unencodable_text(item, f"{path}[{key!r}]")
            if found:
                return found
    return None


def _utf8(text: str) -> str | None:
    """Why UTF-8 cannot hold ``text`` (a lone surrogate), else None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"holds a lone surrogate ({text[exc.start]!r} at position {exc.start}), which UTF-8 and so JSON "
                "text cannot hold (it is half of a pair: text decoded with errors='surrogateescape' or cut "
                "mid-pair)")
    return None


def _check_text(text: str, path: str) -> None:
    problem = _utf8(text)
    if problem is not None:
        raise StateValueError(path, text, problem)


def _check(value: Any, path: str, depth: int, parents: set[int]) -> None:
    """``parents``: ids of the containers ``value`` sits in (a cycle leads back to one of them)."""
    kind = type(value)
    if value is None or kind is bool:
        return
    if isinstance(value, str):  # (a str subclass, e.g. a str enum, is stored as its plain text)
        _check_text(value, path)
        return
    if isinstance(value, int):
        if value.bit_length() > _INT_BITS_CHECKED:
            try:
                str(value)
            except ValueError as exc:  # Python's int-to-text limit: json.dumps cannot write it
                raise StateValueError(path, value, f"is an int too long to write as text ({exc})") from None
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StateValueError(path, value, f"is {value!r}, which is not JSON")
        return
    if isinstance(value, (list, dict)):  # subclasses (OrderedDict, defaultdict...) are stored as the plain form
        if id(value) in parents:
            raise StateValueError(path, value, f"contains itself (a cycle: this {type(value).__name__} is one of "
                                               "the containers it sits in), which JSON cannot hold")
        if depth >= MAX_DEPTH:
            raise StateValueError(path, value, f"is nested deeper than {MAX_DEPTH} levels, deeper than JSON "
                                               "readers accept (pydantic's serializer stops at 254, Python's json "
                                               "near the recursion limit)")
        parents.add(id(value))
        try:
            if isinstance(value, list):
                for index, item in enumerate(value):
                    _check(item, f"{path}[{index}]", depth + 1, parents)
            else:
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise StateValueError(f"{path} key {key!r}", key,
                                              f"is {_a(type(key).__name__)}; JSON object keys are str (it would "
                                              f"come back as {str(key)!r})")
                    _check_text(key, f"{path} key {key!r}")
                    _check(item, f"{path}[{key!r}]", depth + 1, parents)
        finally:
            parents.discard(id(value))
        return
    raise StateValueError(path, value)


def refused_value(delta: Mapping[str, Any], dumps: Callable[[Any], str], error: BaseException) -> StateValueError:
    """The ``StateValueError`` for a delta that passed ``check_storable`` but that ``dumps`` still refused with
    ``error``: the first key whose value alone it refuses is named (else the delta as a whole)."""
    for key, value in delta.items():
        if isinstance(key, str) and key.startswith(TEMP_PREFIX):
            continue
        try:
            dumps({key: value})
        except (ValueError, TypeError, RecursionError) as exc:
            return StateValueError(f"state[{key!r}]", value, f"was refused by the JSON encoder ({exc})")
    return StateValueError("state", delta, f"was refused by the JSON encoder ({error})")
