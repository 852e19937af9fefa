"""``python -m pytest -p tests.line_guard``: the run of the tests marked ``line_independent``, with the proof.

tox runs a test module marked ``pytestmark = pytest.mark.line_independent`` once (env adk2), not on both ADK
lines (tox.ini says which env runs what). That is only safe for a test whose outcome cannot depend on the line:
one that imports nothing whose pinned version differs between constraints.txt and constraints-adk1.txt. This
plugin checks that instead of trusting the mark:

* the packages pinned differently in the two files (google-adk, pydantic, rich, PyYAML, ... read from the files,
  less what pytest itself has loaded) become import names, and every import of one raises
  ``LineDependentImport`` naming the package and the fix — in this process and, through a sitecustomize on
  PYTHONPATH (``site/``), in every Python process the run starts (xdist workers, Job_B, a CLI under test);
* only the marked modules are collected (and the folders holding them): an unmarked module would import what it
  likes at collection;
* it must run with ``-p no:rlm_conformance -p no:syrupy``: those plugins import pydantic and syrupy (the check
  at start says so).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(__file__).resolve().parent / "site"
LINES = (ROOT / "constraints.txt", ROOT / "constraints-adk1.txt")
MARK = "line_independent"


def _load_site():
    spec = importlib.util.spec_from_file_location("rlm_line_guard_site", SITE / "sitecustomize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("#")[0].strip().partition("==")
        if version:
            pins[_normal(name)] = version.strip()
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def line_dependent_imports(loaded: set[str]) -> dict[str, str]:
    """Top-level import name -> the distributions behind it whose pins differ between the two lines."""
    adk2, adk1 = (_pins(path) for path in LINES)
    differing = {name for name in adk2.keys() | adk1.keys() if adk2.get(name) != adk1.get(name)}
    blocked = {}
    for top, distributions in packages_distributions().items():
        names = sorted({d for d in distributions if _normal(d) in differing})
        if names and top not in loaded:
            blocked[top] = ", ".join(names)
    return blocked


def is_marked(path: Path) -> bool:
    """Whether a test module says ``pytestmark = pytest.mark.line_independent`` (read, not imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
               and MARK in ast.unparse(node.value) for node in tree.body)


def _marked_modules() -> list[Path]:
    return [p for p in (ROOT / "tests").rglob("test_*.py") if is_marked(p)]


LOADED_BY_PYTEST = frozenset(sys.modules)
"""What was imported when ``-p`` loaded this plugin, before any other: pytest's own dependencies (the runner)."""
MODULES = pytest.StashKey[list[Path]]()


def guard_environment(blocked: dict[str, str]) -> dict[str, str]:
    """The variables that carry the guard into child processes."""
    return {_load_site().VARIABLE: ";".join(f"{top}={names}" for top, names in sorted(blocked.items())),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for plugin in ("rlm_conformance", "syrupy"):
        if config.pluginmanager.has_plugin(plugin):
            raise pytest.UsageError(f"tests.line_guard: run with -p no:{plugin} (it imports packages the guard "
                                    f"refuses, before any test runs)")
    os.environ.update(guard_environment(line_dependent_imports(set(LOADED_BY_PYTEST))))
    _load_site().install()
    modules = config.stash[MODULES] = _marked_modules()
    # Paths given on the command line are collected whatever pytest_ignore_collect says: keep those that hold a
    # marked module (tox passes its posargs to this run and to the unguarded one alike).
    here = config.invocation_params.dir
    config.args[:] = [arg for arg in config.args if _holds_marked((here / arg.split("::")[0]).resolve(), modules)]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    path = collection_path.resolve()
    if path.is_dir() or (path.suffix == ".py" and path.name.startswith("test_")):
        return not _holds_marked(path, config.stash[MODULES]) or None
    return None


def _holds_marked(path: Path, modules: list[Path]) -> bool:
    return any(module.is_relative_to(path) for module in modules) if path.is_dir() else path in modules


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Paths or -k that select no line-independent test (tox -e adk2 -- tests/harness/...) are not a failure here.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
