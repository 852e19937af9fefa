"""The harness's layers, read from every ``import`` in ``harness/**/*.py`` (lazy and TYPE_CHECKING ones too).

* The core knows no agent: only the targets built on the reference agent (and the check-testing helpers,
  and the profile's defaults) import ``reference_agent``.
* ``harness/llm`` is below the pipeline: it never imports ``harness.run.runner`` (``harness.run.options`` holds
  what both need).
* No module takes a private name (``_x``) from another harness module; a private *module* is its own
  package's business only.
* No import cycle among harness modules, counting imports inside functions, less the two declared below.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.python_source import ROOT, parse_file

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

MAY_IMPORT_THE_AGENT = {
    "harness/targets/reference.py", "harness/targets/reference_common.py", "harness/targets/legacy.py",
    "harness/targets/databricks.py", "harness/targets/reference_profile.py", "harness/checks/testing.py",
    # the doctor checks the reference agent's Databricks backend: its settings, flags and payload
    "harness/doctor/databricks.py", "harness/doctor/context.py", "harness/doctor/payload.py",
    "harness/doctor/settings_flags.py",
    # the audit reads a Databricks catalog.schema with the backend's settings, SDK client and SQL engine
    "harness/audit/stores/databricks.py",
}
# Lazy imports that close a cycle on purpose; each names why.
DECLARED_CYCLE_EDGES = {
    ("harness.checks.base", "harness.checks._load_all"): "registered_checks() imports every check module, "
                                                         "and each check module registers itself with base",
    ("harness.contract", "harness.contract.differential"): "the package's __getattr__ loads the differential "
                                                           "mode (which runs the runner) only when asked for",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. harness.llm.session
    where: str  # path:line
    module: str  # the absolute module imported from
    names: tuple[str, ...]  # the names taken (empty for ``import x``)
    type_checking: bool


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT) -> tuple[Import, ...]:
    return _imports_in(path, root, parse_file(path))


@functools.lru_cache(maxsize=None)
def _imports_in(path: Path, root: Path, tree: ast.Module) -> tuple[Import, ...]:
    """Once per parsed tree (the four scans read the same ~200 files; a changed file is a new tree)."""
    source = module_name(path, root)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and _is_type_checking(block.test)
                   for stmt in block.body for node in ast.walk(stmt)}
    relative = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            where = f"{relative}:{node.lineno}"
            found += [Import(source, where, alias.name, (), id(node) in typing_only) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            found.append(Import(source, f"{relative}:{node.lineno}", module, tuple(a.name for a in node.names),
                                id(node) in typing_only))
    return tuple(found)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _sources(root: Path) -> list[Path]:
    return sorted((root / "harness").rglob("*.py"))


def agent_imports(root: Path = ROOT) -> list[str]:
    return [f"{i.where}: {i.module}" for path in _sources(root)
            if str(path.relative_to(root)) not in MAY_IMPORT_THE_AGENT
            for i in imports_of(path, root) if i.module.split(".")[0] == "reference_agent"]


def llm_imports_of_the_runner(root: Path = ROOT) -> list[str]:
    return [f"{i.where}: {i.module} {', '.join(i.names)}".rstrip() for path in _sources(root)
            for i in imports_of(path, root) if i.source.startswith("harness.llm")
            and (i.module == "harness.run.runner" or (i.module == "harness" and "runner" in i.names))]


def private_imports(root: Path = ROOT) -> list[str]:
    modules = {module_name(p, root) for p in _sources(root)}
    found = []
    for path in _sources(root):
        for i in imports_of(path, root):
            if i.module.split(".")[0] != "harness":
                continue
            for name in i.names or (None,):
                full = i.module if name is None else (f"{i.module}.{name}" if f"{i.module}.{name}" in modules
                                                      else i.module)
                parts = full.split(".")
                # A private module: only its own package (and the packages inside it) may import it.
                for depth, part in enumerate(parts):
                    if part.startswith("_") and not part.startswith("__"):
                        owner = ".".join(parts[:depth])
                        if not (i.source + ".").startswith(owner + "."):
                            found.append(f"{i.where}: {full} (a private module of {owner})")
                # A private name of a module: only that module uses it.
                if name is not None and full == i.module and name.startswith("_") and i.source != i.module:
                    found.append(f"{i.where}: {name} from {i.module}")
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected groups of harness modules, by every import that runs (TYPE_CHECKING ones do not)."""
    modules = {module_name(p, root) for p in _sources(root)}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for path in _sources(root):
        for i in imports_of(path, root):
            if i.type_checking:
                continue
            for target in [i.module, *(f"{i.module}.{n}" for n in i.names)]:
                parts = target.split(".")
                for n in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ first
                    step = ".".join(parts[:n])
                    if (step in modules and step != i.source and not (i.source + ".").startswith(step + ".")
                            and (i.source, step) not in DECLARED_CYCLE_EDGES):
                        edges[i.source].add(step)
    return _strongly_connected(edges)


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def test_only_the_reference_targets_import_the_agent() -> None:
    found = agent_imports()
    assert not found, ("the harness core imports reference_agent; give the harness its own helper, or take it from "
                       "the reference target (harness/targets/reference_common.py), imported lazily:\n"
                       + "\n".join(found))


def test_llm_does_not_import_the_runner() -> None:
    found = llm_imports_of_the_runner()
    assert not found, "harness/llm is below the runner; take RunOptions & co. from harness.run.options:\n" + \
        "\n".join(found)


def test_no_private_name_crosses_a_module() -> None:
    found = private_imports()
    assert not found, "give the name a public spelling in the module both can import:\n" + "\n".join(found)


def test_harness_modules_import_no_cycle() -> None:
    cycles = import_cycles()
    assert not cycles, ("import cycle(s) among harness modules (move what both need into a module below them, "
                        "or declare the edge in DECLARED_CYCLE_EDGES with why):\n"
                        + "\n".join(" <-> ".join(group) for group in cycles))


@pytest.fixture
def fake_tree(tmp_path: Path):
    def write(files: dict[str, str]) -> Path:
        for name, text in {"harness/__init__.py": "", **files}.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text, encoding="utf-8")
        return tmp_path

    return write


def test_the_scans_see_each_violation(fake_tree) -> None:
    root = fake_tree({
        "harness/llm/__init__.py": "",
        "harness/llm/session.py": "def f():\n    from ..run.runner import RETRY_OPTIONS\n",
        "harness/run/__init__.py": "",
        "harness/run/runner.py": "from ..llm import session\nfrom ..report.write import _helper\n",
        "harness/report/__init__.py": "",
        "harness/report/_private.py": "",
        "harness/report/write.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from reference_agent.app import App\n",
        "harness/targets/__init__.py": "",
        "harness/targets/reference.py": "import reference_agent\nfrom ..report import _private\n",
    })
    assert agent_imports(root) == ["harness/report/write.py:3: reference_agent.app"]
    assert llm_imports_of_the_runner(root) == ["harness/llm/session.py:2: harness.run.runner RETRY_OPTIONS"]
    assert private_imports(root) == ["harness/run/runner.py:2: _helper from harness.report.write",
                                     "harness/targets/reference.py:2: harness.report._private (a private module "
                                     "of harness.report)"]
    assert import_cycles(root) == [["harness.llm.session", "harness.run.runner"]]


def test_a_private_module_is_its_own_packages_business(fake_tree) -> None:
    root = fake_tree({"harness/checks/__init__.py": "", "harness/checks/_load_all.py": "",
                      "harness/checks/base.py": "def f():\n    from . import _load_all\n"})
    assert private_imports(root) == []
