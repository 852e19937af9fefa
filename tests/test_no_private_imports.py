"""No module of ours imports a private module of ADK (or google-genai): those move between versions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.python_source import ROOT, parse_file, project_sources

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

SOURCES = project_sources("reference_agent", "harness", "tests", "bench")


def _private_imports(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(parse_file(path)):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            parts = name.split(".")
            if parts[:1] == ["google"] and any(part.startswith("_") for part in parts[1:]):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    return found


def test_no_private_google_module_is_imported() -> None:
    found = [line for path in SOURCES for line in _private_imports(path)]
    assert not found, ("import the public name instead (e.g. google.adk.errors.StaleSessionError):\n"
                       + "\n".join(found))


def test_the_scan_sees_a_private_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    # The deliberate defect is written at run time (a file in tmp_path), not spelled as an import in this module.
    private = ".".join(("google", "adk", "errors", "_stale_session_error"))
    bad.write_text(f"from {private} import StaleSessionError\n", encoding="utf-8")
    assert _private_imports(bad, tmp_path) == [f"bad.py:1: {private}"]
