"""Turn one pydantic error on a scenario into '<field>: <expected>, got <value>. Fix: <how>'.

Pure functions of the error and the ``Scenario`` model; the loader adds file and line.
"""

from __future__ import annotations

import difflib
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, JsonValue
from pydantic_core import ErrorDetails

from harness.scenario.models import STEP_TAGS, Scenario

_EXPECTED = {  # pydantic error type -> what the field expected, in the user's (YAML) terms
    "string_type": "expected a string",
    "int_type": "expected a whole number", "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number", "float_parsing": "expected a number",
    "bool_type": "expected true or false", "bool_parsing": "expected true or false",
    "dict_type": "expected a mapping (key: value lines)", "model_type": "expected a mapping (key: value lines)",
    "model_attributes_type": "expected a mapping (key: value lines)",
    "list_type": "expected a list (lines starting with '- ')",
}
_FIX = {
    "string_type": "quote the value, e.g. \"5\" or \"true\"",
    "int_type": "write a whole number without quotes", "int_parsing": "write a whole number without quotes",
    "int_from_float": "write a whole number without quotes",
    "dict_type": "write the value as 'key: value' lines indented under the field, or as {key: value}",
    "model_type": "write the value as 'key: value' lines indented under the field",
    "list_type": "write the value as lines starting with '- ' indented under the field, or as [a, b]",
    "too_short": "add at least one item",
    "check_selection": "remove the check from 'only' or from 'skip'",
}
_PATTERN_FIX = {
    "name": "use lowercase letters, digits and underscores only, e.g. 'single_delegation'",
    "target": "use 'reference', 'legacy' or 'package.module:attribute'",
}


def _strip(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _descend(tp: Any, part: int | str) -> Any:
    tp = _strip(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field else None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        found = (_descend(arg, part) for arg in get_args(tp) if arg is not type(None))
        return next((f for f in found if f is not None), None)
    if origin is list:
        return get_args(tp)[0] if isinstance(part, int) else None
    if origin is dict:
        return get_args(tp)[1]
    return None


_JSON_ITEM = object()  # a key or index inside a JsonValue container


def _walk(loc: tuple[int | str, ...]) -> tuple[tuple[int | str, ...], Any]:
    """(the location without union tags, the type found at its end or None)."""
    tp: Any = Scenario
    visible: list[int | str] = []
    for part in loc:
        if tp is JsonValue and part in ("dict", "list"):
            tp = _JSON_ITEM  # JsonValue's union tag
            continue
        if get_origin(_strip(tp)) in (Union, types.UnionType) and part in STEP_TAGS:
            tp = STEP_TAGS[part]  # the script step's union tag
            continue
        visible.append(part)
        tp = JsonValue if tp is _JSON_ITEM else _descend(tp, part) if tp is not None else None
    return tuple(visible), tp


def visible_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The error location as the user wrote it: without the union tags pydantic inserts."""
    return _walk(loc)[0]


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('sessions', 0, 'turns', 1, 'user')`` -> ``sessions[0].turns[1].user``."""
    text = ""
    for part in visible_loc(loc):
        if part == "[key]":
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[\"{part}\"]"
    return text


def _render(value: Any, depth: int) -> str:
    if isinstance(value, (dict, list, tuple)) and depth >= 4:
        return "..."
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:100])
    if isinstance(value, dict):
        items = [f"{k}: {_render(v, depth + 1)}" for k, v in list(value.items())[:8]]
        return "{" + ", ".join(items + ["..."] * (len(value) > 8)) + "}"
    if isinstance(value, (list, tuple)):
        items = [_render(v, depth + 1) for v in value[:8]]
        return "[" + ", ".join(items + ["..."] * (len(value) > 8)) + "]"
    return str(value)[:100]


def show(value: Any, limit: int = 80) -> str:
    """A short YAML-flavoured rendering of an input value (bounded, whatever its size or depth)."""
    text = _render(value, 0)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class whose fields live at ``loc`` (a pydantic location), or None."""
    tp = _strip(_walk(loc)[1])
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _describe_field(loc: tuple[int | str, ...]) -> str:
    model = model_at(loc[:-1]) if loc else None
    field = model.model_fields.get(loc[-1]) if model and isinstance(loc[-1], str) else None
    return f" ('{loc[-1]}': {field.description})" if field and field.description else ""


def closest(word: str, options: list[str]) -> str | None:
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return matches[0] if matches else None


def describe(error: ErrorDetails) -> str:
    """``<expected>, got <value>. Fix: <how>`` for one pydantic error."""
    kind, loc, value = error["type"], tuple(error["loc"]), error.get("input")
    name = str(visible_loc(loc)[-1]) if loc else ""
    if kind == "missing":
        return f"required field is missing. Fix: add '{name}:'{_describe_field(loc)}"
    if kind == "extra_forbidden":
        model = model_at(loc[:-1])
        allowed = list(model.model_fields) if model else []
        guess = closest(name, allowed)
        fix = f"did you mean '{guess}'? Rename it" if guess else "remove it or use one of the allowed fields"
        return (f"unknown field '{name}' (allowed here: {', '.join(allowed)}), got {show(value)}. Fix: {fix}")
    if kind == "invalid_key" or (loc and loc[-1] == "[key]" and kind == "string_type"):
        allowed = list(model.model_fields) if (model := model_at(loc[:-1])) else []
        fix = f"use one of the fields {', '.join(allowed)}" if allowed else "quote the key, e.g. \"1\": ..."
        return f"expected a text key, got {show(value)}. Fix: {fix}"
    if kind == "invalid-json-value":
        return (f"expected a JSON value (text, number, true/false, null, list or mapping), got {show(value)}. "
                "Fix: quote it, e.g. \"2020-01-01\" (YAML reads an unquoted date as a date)")
    if kind == "literal_error":
        options = [o.strip(" '") for o in error.get("ctx", {}).get("expected", "").replace(" or ", ", ").split(",")]
        guess = closest(str(value), options)
        fix = f"did you mean '{guess}'?" if guess else f"use one of: {', '.join(options)}"
        return f"expected one of {', '.join(options)}, got {show(value)}. Fix: {fix}"
    if kind == "string_pattern_mismatch":
        key_error = loc and loc[-1] == "[key]"
        fix = ("use the agent's name (a Python identifier) or 'sub_lm'" if key_error
               else _PATTERN_FIX.get(name, "match the pattern " + error.get("ctx", {}).get("pattern", "")))
        return f"expected text matching {error.get('ctx', {}).get('pattern')}, got {show(value)}. Fix: {fix}"
    if kind == "step_shape":
        fix = ("write one step per list item: a call, a fault and a text answer are separate steps"
               if isinstance(value, dict) and value else "write the step as a mapping, e.g. '- call: exit_loop'")
        return f"{error['msg']}, got {show(value)}. Fix: {fix}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = error.get("ctx", {}).get("ge", error.get("ctx", {}).get("gt"))
        op = ">=" if kind == "greater_than_equal" else ">"
        return f"expected a number {op} {bound}, got {show(value)}. Fix: use a number {op} {bound}"
    if kind == "too_short":
        low = error.get("ctx", {}).get("min_length", 1)
        return f"expected at least {low} item(s), got {show(value)}. Fix: {_FIX[kind]}{_describe_field(loc)}"
    expected = _EXPECTED.get(kind) or error["msg"].replace("Input should be", "expected")
    fix = _FIX.get(kind, "change the value")
    return f"{expected}, got {show(value)}. Fix: {fix}{_describe_field(loc)}"
