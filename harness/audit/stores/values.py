"""Column values as stores return them, made uniform: JSON text or already-decoded JSON, times of every kind."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any


def json_value(value: Any, where: str) -> Any:
    """A JSON column's value: text is decoded (PostgreSQL's JSONB arrives decoded already); NULL stays None."""
    if value is None or isinstance(value, (dict, list)):
        return value
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8")
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            from .base import StoreError

            raise StoreError(f"{where}: not valid JSON ({exc.msg} at character {exc.pos}). The audit reads the "
                             f"store as its service wrote it; this row was changed by something else.") from None
    return value


def json_object(value: Any, where: str) -> dict[str, Any]:
    decoded = json_value(value, where)
    return dict(decoded) if isinstance(decoded, Mapping) else {}


def epoch(value: Any) -> float | None:
    """Epoch seconds from a DOUBLE, a datetime (naive = UTC, as ADK and the seeds write them) or its text."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            try:
                value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.timestamp()
    return None


def tool_names(payload: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the function calls and function responses in an event payload's content (snake_case as ADK
    writes it, camelCase as a ``by_alias`` dump writes it)."""
    content = payload.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    calls: list[str] = []
    responses: list[str] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        for names, keys in ((calls, ("function_call", "functionCall")),
                            (responses, ("function_response", "functionResponse"))):
            item = next((part[k] for k in keys if isinstance(part.get(k), Mapping)), None)
            if item is not None and item.get("name"):
                names.append(str(item["name"]))
    return tuple(calls), tuple(responses)


def has_content(payload: Mapping[str, Any]) -> bool:
    """Whether the event carried model content: a part with text or a function call/response."""
    content = payload.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return any(isinstance(p, Mapping) and any(p.get(k) for k in ("text", "function_call", "functionCall",
                                                                   "function_response", "functionResponse"))
               for p in (parts if isinstance(parts, list) else ()))


def field(payload: Mapping[str, Any], snake: str, camel: str) -> Any:
    return payload.get(snake, payload.get(camel))
