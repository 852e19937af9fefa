"""Answer markers: ``FINAL(answer)`` and ``FINAL_VAR(name)``.

Two readers, one rule set:

* ``find_final_answer(text)`` reads *model text* the way the RLM reference does
  (alexzhang13/rlm ``rlm/utils/parsing.py::find_final_answer``, read at commit
  3911e09a): ``FINAL_VAR`` is looked for first with ``^\\s*FINAL_VAR\\((.*?)\\)``
  (MULTILINE|DOTALL) and its name stripped of spaces and quotes; then ``FINAL``
  must start a line. Upstream's older regex ``^\\s*FINAL\\((.*)\\)\\s*$``
  (MULTILINE|DOTALL, greedy so nested parentheses survive) is applied per line
  first; an answer spanning lines falls back to upstream's current
  balanced-parenthesis scan, so ``FINAL(42)`` followed by prose ending in ``)``
  does not swallow the prose (which the DOTALL greedy regex would).
  Unlike upstream, markers inside ``` fences are ignored: a fenced block is
  code to run, not an answer.
* ``find_final_calls(code)`` reads *code text* with ``ast``: only real calls of
  the names ``FINAL``/``FINAL_VAR`` count, never text inside a string literal,
  a comment or ``print("FINAL(x)")``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

FINAL_VAR_PATTERN = re.compile(r"^\s*FINAL_VAR\((.*?)\)", re.MULTILINE | re.DOTALL)
# Greedy within one line: FINAL(f(x)) and FINAL("a ) b") keep their inner parentheses.
FINAL_LINE_PATTERN = re.compile(r"^\s*FINAL\((.*)\)\s*$", re.MULTILINE)
FINAL_START_PATTERN = re.compile(r"^\s*FINAL\(", re.MULTILINE)
_FENCE_LINE = re.compile(r"^\s*```")

MarkerKind = Literal["FINAL", "FINAL_VAR"]


@dataclass(frozen=True)
class FinalMarker:
    kind: MarkerKind
    # The answer text for FINAL, the variable name for FINAL_VAR.
    value: str


def strip_fenced_blocks(text: str) -> str:
    """``text`` with every ``` fenced block (fence lines included) blanked; line count kept."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        if _FENCE_LINE.match(line):
            inside = not inside
            out.append("")
        else:
            out.append("" if inside else line)
    return "\n".join(out)


def clean_variable_name(raw: str) -> str:
    """``FINAL_VAR( "x" )`` and ``FINAL_VAR(x)`` both name ``x`` (upstream strips the same way)."""
    return raw.strip().strip('"').strip("'").strip()


def _balanced(text: str, start: int) -> str | None:
    depth = 1
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def find_final_answer(text: str) -> FinalMarker | None:
    """The answer marker of model text, or None; fenced blocks are not looked at."""
    visible = strip_fenced_blocks(text)
    match = FINAL_VAR_PATTERN.search(visible)
    if match:
        return FinalMarker("FINAL_VAR", clean_variable_name(match.group(1)))
    match = FINAL_LINE_PATTERN.search(visible)
    start = FINAL_START_PATTERN.search(visible)
    if match and (start is None or match.start() <= start.start()):
        return FinalMarker("FINAL", match.group(1).strip())
    if start:
        inner = _balanced(visible, start.end())
        if inner is not None:
            return FinalMarker("FINAL", inner.strip())
    return None


def find_final_calls(code: str) -> list[FinalMarker]:
    """Every call of ``FINAL``/``FINAL_VAR`` in ``code``, in source order; [] if it does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[int, int, FinalMarker]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        if name not in ("FINAL", "FINAL_VAR"):
            continue
        arg = node.args[0] if node.args else None
        if name == "FINAL_VAR" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            value = clean_variable_name(arg.value)
        else:
            segment = ast.get_source_segment(code, arg) if arg is not None else ""
            value = segment or ""
        found.append((node.lineno, node.col_offset, FinalMarker(name, value)))  # type: ignore[arg-type]
    return [marker for _, _, marker in sorted(found, key=lambda item: (item[0], item[1]))]


def has_final_call(code: str) -> bool:
    """Whether ``code`` calls FINAL or FINAL_VAR (strings and comments do not count)."""
    return bool(find_final_calls(code))
