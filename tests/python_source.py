"""Parsing the project's own Python files in tests, safe from a CPython 3.11 bug.

On CPython 3.11.7 ``ast.parse`` can fail with ``SystemError: AST constructor recursion depth mismatch`` when a
finalizer runs inside the AST constructor — e.g. an aiosqlite connection of an ADK ``DatabaseSessionService``
that an earlier test on the same worker left to the garbage collector (seen once in CI on ADK 1.39.1).
Collecting first and holding the collector off while parsing keeps finalizers out of the constructor.
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if was_enabled:
            gc.enable()


def parse_file(path: Path) -> ast.Module:
    return parse_source(path.read_text(encoding="utf-8"), str(path))
