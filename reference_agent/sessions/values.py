"""What a persisted state value may be: JSON-native data, checked before anything is written.

Both engines keep state as JSON text. A value JSON cannot hold exactly would come back as something else
(a set or tuple as a list, bytes or a datetime as a string, an object as its repr) while the caller's live
session keeps the original — two views of one key. So such values are refused, naming the key (the full
path for nested values) and the type, before the first statement runs.

Allowed: ``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list`` and ``dict`` with ``str`` keys, nested.
NaN and ±inf are refused too: ``json`` writes them as ``NaN``/``Infinity``, which is not JSON and which
other readers of the tables (Spark's JSON functions, ``json.loads`` elsewhere) reject or turn into null.
``temp:`` keys are never persisted, so they may hold anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

TEMP_PREFIX = "temp:"
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
        super().__init__(f"{path} {problem}; {hint + '; ' if hint else ''}session state is stored as JSON "
                         "(dict with str keys, list, str, int, finite float, bool, None). Nothing was written.")
        self.path = path


def check_storable(delta: Mapping[str, Any], *, name: str = "state") -> None:
    """Raise ``StateValueError`` for the first value of ``delta`` (``temp:`` keys aside) JSON cannot hold."""
    for key, value in delta.items():
        if not isinstance(key, str):
            raise StateValueError(f"{name} key {key!r}", key, f"is {_a(type(key).__name__)}, not a str")
        if not key.startswith(TEMP_PREFIX):
            _check(value, f"{name}[{key!r}]")


def _check(value: Any, path: str) -> None:
    if value is None or type(value) in (bool, int, str):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise StateValueError(path, value, f"is {value!r}, which is not JSON")
        return
    if type(value) is list:
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    if type(value) is dict:
        for key, item in value.items():
            if not isinstance(key, str):
                raise StateValueError(f"{path} key {key!r}", key,
                                      f"is {_a(type(key).__name__)}; JSON object keys are str (it would come back "
                                      f"as {str(key)!r})")
            _check(item, f"{path}[{key!r}]")
        return
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) or isinstance(value, (list, dict)):
        # Subclasses (str/int enums, OrderedDict, defaultdict...) are stored as their plain JSON form; their
        # contents are checked like the plain types'.
        if isinstance(value, list):
            _check(list(value), path)
        elif isinstance(value, dict):
            _check(dict(value), path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise StateValueError(path, value, f"is {value!r}, which is not JSON")
        return
    raise StateValueError(path, value)
