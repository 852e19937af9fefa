"""The project's own Python files, parsed once per test process and shared by every static scan.

The scans (tests/test_layers.py, test_no_private_imports.py, test_adk_compat.py, the examples' import rule)
read the same few hundred files; each file is parsed once per process, and a file changed on disk since (a
test's tmp_path tree) is parsed again.

Safe from a CPython 3.11 bug: on 3.11.7 ``ast.parse`` can fail with ``SystemError: AST constructor recursion
depth mismatch`` when a finalizer runs inside the AST constructor — e.g. an aiosqlite connection of an ADK
``DatabaseSessionService`` that an earlier test on the same worker left to the garbage collector (seen once
in CI on ADK 1.39.1). Such finalizers run from the cyclic collector, so it is held off while parsing. (It is
not run first: a full collection in a worker late in the suite costs about half a second, and it used to run
once per file, which made four scans of ``harness/`` take 100 s each.)
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_PARSED: dict[tuple[str, int, int], tuple[str, ast.Module]] = {}


def parse_source(source: str, filename: str = "<unknown>") -> ast.Module:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if was_enabled:
            gc.enable()


def read_and_parse(path: Path) -> tuple[str, ast.Module]:
    """The file's text and tree, parsed once per process (again if the file changed since)."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        source = path.read_text(encoding="utf-8")
        _PARSED[key] = (source, parse_source(source, str(path)))
    return _PARSED[key]


def parse_file(path: Path) -> ast.Module:
    return read_and_parse(path)[1]


def project_sources(*folders: str, root: Path = ROOT) -> list[Path]:
    """Every ``*.py`` under the given folders of the checkout, sorted."""
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py"))
