"""The guard behind ``line_independent`` (tests/line_guard) refuses what it must, where it must."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.line_guard import guard_environment, is_marked, line_dependent_imports

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


def test_the_packages_pinned_differently_are_refused_and_the_shared_ones_are_not() -> None:
    blocked = line_dependent_imports(loaded=set())
    assert {"google", "pydantic", "yaml", "rich", "jinja2", "syrupy", "aiohttp"} <= blocked.keys()
    assert "google-adk" in blocked["google"] and blocked["pydantic"] == "pydantic"
    # duckdb, vcrpy, databricks-sdk, hypothesis and pytest-xdist are pinned alike on both lines
    assert not {"duckdb", "vcr", "hypothesis", "xdist"} & blocked.keys()
    assert "pytest" not in line_dependent_imports(loaded={"pytest"})  # what pytest loaded is the runner's


def test_a_child_process_refuses_the_import_loudly(tmp_path: Path) -> None:
    env = {**os.environ, **guard_environment({"pydantic": "pydantic"})}
    # An `except ImportError` fallback must not swallow it: the refusal is not an ImportError.
    code = "try:\n    import pydantic\nexcept ImportError:\n    print('fell back')\n"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0 and "fell back" not in done.stdout
    assert "LineDependentImport: import pydantic: pydantic is pinned differently" in done.stderr
    assert "remove the mark" in done.stderr
    allowed = subprocess.run([sys.executable, "-c", "import json, duckdb"], env=env, capture_output=True, text=True)
    assert allowed.returncode == 0, allowed.stderr


def test_only_a_module_level_mark_counts(tmp_path: Path) -> None:
    marked, other = tmp_path / "test_a.py", tmp_path / "test_b.py"
    marked.write_text("import pytest\n\npytestmark = [pytest.mark.line_independent]\n", encoding="utf-8")
    other.write_text("import pytest\n\n\n@pytest.mark.line_independent\ndef test_x():\n    pass\n", encoding="utf-8")
    assert is_marked(marked) and not is_marked(other)
    assert is_marked(Path(__file__))
