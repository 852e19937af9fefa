"""The harness's layers, read from every ``import`` in ``harness/**/*.py`` (lazy and TYPE_CHECKING ones too).

* The harness knows no agent: no module of it imports ``reference_agent``, which registers as a target plugin
  through an entry point like any user's package.
* Every room of ``harness/`` (a package, or a module standing alone) stands on one floor of ``FLOORS``, and every
  import (lazy and TYPE_CHECKING ones too) goes to a room on a lower floor, or stays in its room: no arrow runs
  back up. README.md's map of the tree names the rooms floor by floor, in this order.
* No module takes a private name (``_x``) from another harness module; a private *module* is its own
  package's business only.
* No import cycle among harness modules, counting imports inside functions, less the two declared below.
"""

from __future__ import annotations

import ast
import re
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.python_source import ROOT, parse_file

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

# Modules of harness/ that may import the reference agent: none. The agent registers as a target plugin
# (reference_agent/conformance/, harness/targets/plugins.py), as any user's package does.
MAY_IMPORT_THE_AGENT: set[str] = set()
# The floors of harness/, from the ground up: a room imports only rooms of lower floors (and itself).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("files", "environ", "json_walk", "extras"),
    ("scenario", "trace", "databricks_fake"),
    ("llm", "project_config"),
    ("recording",),
    ("targets",),
    ("checks",),
    ("result", "snapshot", "contract"),
    ("run", "report"),
    ("differential", "init", "audit", "doctor", "prdiff", "rerecord", "crash"),
    ("importers", "explore"),
    ("cli", "pytest_plugin"),
    ("__main__",),
)
# Lazy imports that close a cycle on purpose; each names why.
DECLARED_CYCLE_EDGES = {
    ("harness.checks.base", "harness.checks._load_all"): "registered_checks() imports every check module, "
                                                         "and each check module registers itself with base",
    ("harness.contract", "harness.differential.run"): "the package's __getattr__ loads the differential "
                                                           "mode (which runs the runner) only when asked for",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. harness.run.model_session
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


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 else None


def floor_of(room: str, floors: tuple[tuple[str, ...], ...] = FLOORS) -> int | None:
    return next((n for n, rooms in enumerate(floors) if room in rooms), None)


def rooms(root: Path = ROOT) -> set[str]:
    return {path.relative_to(root / "harness").parts[0].removesuffix(".py") for path in _sources(root)
            if path.relative_to(root / "harness").parts[0] != "__init__.py"}


def arrows_up(root: Path = ROOT, floors: tuple[tuple[str, ...], ...] = FLOORS) -> list[str]:
    """Imports from a room to one on the same floor or higher (a room left off every floor is one too)."""
    found = [f"harness/{room}: on no floor of FLOORS" for room in sorted(rooms(root)) if floor_of(room, floors) is None]
    modules = {module_name(p, root) for p in _sources(root)}
    for path in _sources(root):
        for i in imports_of(path, root):
            source = room_of(i.source)
            for target in {i.module, *(f"{i.module}.{n}" for n in i.names)} & modules or {i.module}:
                room = room_of(target)
                if source is None or room is None or room == source or target == "harness":
                    continue
                here, there = floor_of(source, floors), floor_of(room, floors)
                if here is not None and there is not None and there >= here:
                    found.append(f"{i.where}: {i.module} (harness/{source}, floor {here} -> harness/{room}, "
                                 f"floor {there})")
    return sorted(set(found))


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
    assert not found, ("the harness imports reference_agent; give the harness its own helper, or let the agent's "
                       "target plugin hand it over (reference_agent/conformance/plugin.py):\n"
                       + "\n".join(found))


def test_no_import_runs_back_up() -> None:
    found = arrows_up()
    assert not found, ("an import runs up (or across) the floors of harness/ (FLOORS): move what both need to a "
                       "room below them, or pass it in from above:\n" + "\n".join(found))


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
    assert agent_imports(root) == ["harness/report/write.py:3: reference_agent.app",
                                   "harness/targets/reference.py:1: reference_agent"]
    assert arrows_up(root, (("llm", "report"), ("run",))) == [
        "harness/llm/session.py:2: harness.run.runner (harness/llm, floor 0 -> harness/run, floor 1)",
        "harness/targets: on no floor of FLOORS"]
    assert arrows_up(root, (("llm",), ("run", "report"), ("targets",))) == [
        "harness/llm/session.py:2: harness.run.runner (harness/llm, floor 0 -> harness/run, floor 1)",
        "harness/run/runner.py:2: harness.report.write (harness/run, floor 1 -> harness/report, floor 1)"]
    assert private_imports(root) == ["harness/run/runner.py:2: _helper from harness.report.write",
                                     "harness/targets/reference.py:2: harness.report._private (a private module "
                                     "of harness.report)"]
    assert import_cycles(root) == [["harness.llm.session", "harness.run.runner"]]


def test_a_private_module_is_its_own_packages_business(fake_tree) -> None:
    root = fake_tree({"harness/checks/__init__.py": "", "harness/checks/_load_all.py": "",
                      "harness/checks/base.py": "def f():\n    from . import _load_all\n"})
    assert private_imports(root) == []


def readme_floors(text: str) -> list[set[str]]:
    """The rooms README.md's "The tree" names, one bullet a floor, from the top."""
    section = text.split("\n## The tree\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n\* ", "\n" + section.split("\n* ", 1)[1]) if "\n* " in section else []
    return [set(re.findall(r"\*\*`harness/(\w+)`\*\*", bullet)) for bullet in bullets if bullet.strip()]


def test_the_readme_map_names_every_room_on_its_floor() -> None:
    floors = [set(rooms) for rooms in reversed(FLOORS) if rooms != ("__main__",)]
    named = readme_floors((ROOT / "README.md").read_text(encoding="utf-8"))
    assert named == floors, ("README.md's map of the tree (## The tree: one bullet a floor, from the top) and FLOORS "
                             "differ; write the room on its floor in both:\n"
                             f"README: {named}\nFLOORS: {floors}")
    assert set().union(*floors) | {"__main__"} == rooms(), "a room of harness/ is on no floor, or a floor names none"
