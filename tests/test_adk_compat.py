"""adk_compat is the one place that branches on what the installed ADK has (issue 17).

Elsewhere no ``hasattr``/``getattr`` probes a google.adk object, no ``try: import google.adk...`` guards an
import, no code reads ADK's version, and no test skips by ADK version: they use adk_compat's flags instead.
"""

from __future__ import annotations

import ast
from pathlib import Path


import adk_compat
from tests.python_source import ROOT, project_sources, read_and_parse

SOURCES = project_sources("reference_agent", "harness", "tests", "bench", "examples")
# Reads of ADK's version that record it and never branch on it, each with why adk_compat cannot be asked.
RECORDS_VERSION = {"harness/cli/common.py": "the report's `adk` field (merge refuses shards of two ADK lines); the "
                                            "parallel parent must not import ADK, and adk_compat does"}


def _adk_names(tree: ast.AST) -> set[str]:
    """Local names bound to something imported from google.adk (modules and their members)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("google.adk"):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names
                      if alias.name.startswith("google.adk") and alias.asname}
    return names


def _mentions_adk(node: ast.AST, names: set[str]) -> bool:
    text = ast.unparse(node)
    return "google.adk" in text or any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def feature_branches(path: Path, root: Path = ROOT) -> list[str]:
    source = path.read_text(encoding="utf-8")
    if "adk" not in source:  # every probe this looks for names google.adk (an import of it, or its version)
        return []
    source, tree = read_and_parse(path)
    names = _adk_names(tree)
    found = []
    relative = path.relative_to(root)
    for node in ast.walk(tree):
        # hasattr(x, ...) or getattr(x, ..., default) on an ADK object asks whether ADK has something; a plain
        # getattr(x, name) reads an attribute every line has.
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and (node.func.id == "hasattr" or (node.func.id == "getattr" and len(node.args) == 3))
                and node.args and _mentions_adk(node.args[0], names)):
            found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Try) and any(
                isinstance(stmt, (ast.Import, ast.ImportFrom)) and "google.adk" in ast.unparse(stmt)
                for stmt in node.body) and any(
                "ImportError" in ast.unparse(h.type) or "ModuleNotFoundError" in ast.unparse(h.type)
                for h in node.handlers if h.type is not None):
            found.append(f"{relative}:{node.lineno}: try-import of google.adk")
    adk = "google" + "-adk"  # spelled apart so this file does not match itself
    for marker in (f'version("{adk}")', f"version('{adk}')", "google.adk" + ".version", "adk" + ".__version__"):
        if marker in source and not (marker.startswith("version(") and str(relative) in RECORDS_VERSION):
            found.append(f"{path.relative_to(root)}: reads ADK's version ({marker})")
    return found


def test_only_adk_compat_branches_on_adk_features() -> None:
    found = [line for path in SOURCES for line in feature_branches(path)]
    assert not found, "branch on a flag of adk_compat (add one there, documented) instead:\n" + "\n".join(found)


def test_the_scan_sees_a_feature_probe_and_a_guarded_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import google.adk.errors as errors\nfrom google.adk.sessions import BaseSessionService\n"
                   "X = hasattr(errors, 'StaleSessionError')\nY = hasattr(BaseSessionService, 'get_user_state')\n"
                   "try:\n    from google.adk.errors import StaleSessionError\nexcept ImportError:\n    pass\n",
                   encoding="utf-8")
    assert sorted(line.split(": ", 1)[0] for line in feature_branches(bad, tmp_path)) == ["bad.py:3", "bad.py:4",
                                                                                          "bad.py:5"]


def test_the_compat_module_itself_is_exempt_and_does_branch() -> None:
    compat = Path(adk_compat.__file__)
    assert compat.parent.name == "adk_compat" and compat not in SOURCES
    assert feature_branches(compat, compat.parents[1])  # where the probes belong


def test_the_shims_agree_with_the_installed_adk() -> None:
    assert issubclass(adk_compat.StaleSessionError, ValueError)
    assert adk_compat.is_stale_session_error(adk_compat.StaleSessionError("stale"))
    assert not adk_compat.is_stale_session_error(ValueError("Session s not found."))
    model = adk_compat.gemini(model="gemini-2.5-flash", base_url="http://127.0.0.1:9",
                              client_kwargs={"api_key": "k", "vertexai": False})
    assert model.client_kwargs == {"api_key": "k", "vertexai": False}
    assert model.api_client is not None  # built with the key, on either line
    body = ('{"tools": [{"functionDeclarations": [{"name": "f", "description": "Do.\\n\\n    Args:\\n      x: X.\\n    ",'
            ' "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}}}]}]}')
    other = ('{"tools": [{"functionDeclarations": [{"name": "f", "description": "Do.\\n\\nArgs:\\n  x: X.",'
             ' "parameters_json_schema": {"type": "object", "title": "fParams", "properties": {"x": {"type": '
             '"string", "title": "X"}}}}]}]}')
    assert adk_compat.canonical_model_request(body) == adk_compat.canonical_model_request(other)
