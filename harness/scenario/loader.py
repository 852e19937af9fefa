"""Load scenario YAML files into ``Scenario`` models; every user error becomes a ``ScenarioError``.

The YAML is composed into nodes first (they keep line marks) and then constructed,
so a pydantic error location can be traced back to the line that caused it. The
error message has one line per problem::

    scenarios/foo.yaml:12: field 'sessions[0].turns[1].user': expected a string, got 5. Fix: ...
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.constructor import ConstructorError

from harness.errors import HarnessError
from harness.scenario.diagnostics import describe, field_path, visible_loc
from harness.scenario.models import Scenario

SUFFIXES = (".yaml", ".yml")
MAX_VALUES = 200_000
"""Upper bound on the values a file may expand to; guards against alias 'bombs'."""
_EXAMPLE = "scenarios/single_delegation.yaml"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario file, at a line (1-based; None when there is no line)."""

    path: str
    line: int | None
    field: str | None
    text: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.path + "".join(f":{n}" for n in (self.line, self.column) if n is not None)
        text = f"{where}: field '{self.field}': {self.text}" if self.field else f"{where}: {self.text}"
        return text.translate(_LINE_BREAKS)  # one problem, one line, whatever the file held


_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


class ScenarioError(HarnessError):
    """A scenario file (or directory) cannot be used; the message lists every problem, one a line."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        first = self.problems[0]
        self.path, self.line, self.field = first.path, first.line, first.field
        super().__init__("\n".join(str(problem) for problem in self.problems))


class _Checks:
    """Rejects duplicate keys and reports unreadable scalars (2001-02-30) as YAML errors."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                ident = (key_node.tag, key_node.value)
                if ident in seen:
                    raise ConstructorError(None, None, f"found duplicate key '{key_node.value}' (first at line "
                                                       f"{seen[ident]})", key_node.start_mark)
                seen[ident] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # e.g. 2001-02-30, or an int of 5000 digits
            raise ConstructorError(None, None, f"cannot read the value {str(node.value)[:40]!r} ({exc})",
                                   node.start_mark) from exc


class _Loader(_Checks, yaml.SafeLoader):
    """The pure-Python parser: its errors carry the line, column and wording every message here is built on."""


# libyaml's parser, when PyYAML has it: the suite's files load in 0.05 s instead of 0.7 s. A file it refuses is
# parsed again by _Loader, so a bad file gets the same message either way; a file with a tab goes to _Loader
# directly, since libyaml accepts a tab after "key:" that the pure-Python parser refuses (and a file must load,
# or not, the same on a machine without libyaml).
_FastLoader: type | None = type("_FastLoader", (_Checks, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else None


def _check_size(root: yaml.Node) -> None:
    """Reject recursive aliases and alias 'bombs' before anything walks the constructed data."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise ConstructorError(None, None, "found an alias inside its own anchor (a recursive structure)",
                                   node.start_mark)
        open_nodes.add(id(node))
        children = (node.value if isinstance(node, yaml.SequenceNode) else
                    [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
        total = sizes[id(node)] = 1 + sum(size(child) for child in children)
        open_nodes.discard(id(node))
        if total > MAX_VALUES:
            raise ConstructorError(None, None, f"the document expands to more than {MAX_VALUES} values "
                                               "(through aliases)", node.start_mark)
        return total

    size(root)


def _yaml_hint(problem: str) -> str:
    if "'\\t'" in problem:
        return "indent with spaces, not tabs"
    if "cannot read the value" in problem:
        return "quote the value to keep it as text"
    if "alias" in problem:
        return "write the repeated value out instead of using an alias"
    if "duplicate key" in problem:
        return "keep one of the two keys"
    if "mapping values are not allowed" in problem:
        return "quote a value that contains ': ', or fix the indentation of the line"
    return "check the indentation and quoting on that line and the one before"


def _read(loader_class: type, text: str) -> tuple[Any, yaml.Node | None]:
    """The document and its root node, the size checked before anything is constructed."""
    loader = loader_class(text)  # the pure-Python reader checks for unprintable characters right here
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_size(node)
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def _parse_yaml(text: str, path: str) -> tuple[Any, yaml.Node | None]:
    if _FastLoader is not None and "\t" not in text:
        try:
            return _read(_FastLoader, text)
        except Exception:  # noqa: BLE001 - the pure-Python parser below finds the problem and says where
            pass
    try:
        return _read(_Loader, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(exc.problem or exc.context or "cannot parse").split())
        if exc.context and exc.problem and str(exc.problem).startswith("but "):
            problem = f"{exc.context}, {problem}"
        elif exc.context and exc.problem and exc.context_mark:
            problem += f" ({exc.context} at line {exc.context_mark.line + 1})"
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem_at = Problem(path, line, None, f"invalid YAML: {problem}. Fix: {_yaml_hint(problem)}", column)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        problem_at = Problem(path, line, None, f"invalid YAML: unreadable character {exc.character!r} "
                                               f"({exc.reason}). Fix: delete it or save the file as UTF-8 text")
    except RecursionError:
        problem_at = Problem(path, None, None, "invalid YAML: the document is nested too deeply. Fix: nest less")
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        problem_at = Problem(path, None, None, f"invalid YAML: {reason}. Fix: check the file's syntax")
    raise ScenarioError([problem_at])


def _line_of(root: yaml.Node, loc: Sequence[int | str]) -> int:
    """Line of the deepest node that ``loc`` reaches (a mapping entry's key line)."""
    node, line = root, root.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            entries = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)]
            if not entries:
                break
            key, node = entries[-1]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _parse(text: str, path: str, stem: str | None) -> tuple[Scenario, int]:
    data, root = _parse_yaml(text, path)
    if root is None or data is None:
        raise ScenarioError([Problem(path, 1, None, "the file holds no scenario (it is empty or only comments). "
                                                    f"Fix: start from {_EXAMPLE}: a scenario needs at least name, "
                                                    "description, sessions and script")])
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
        raise ScenarioError([Problem(path, root.start_mark.line + 1, None,
                                     f"the top level must be a mapping of scenario fields (name: ..., description: "
                                     f"..., sessions: ..., script: ...), got {kind}. Fix: start from {_EXAMPLE}")])
    problems: list[Problem] = []
    name = data.get("name")
    if stem is not None and isinstance(name, str) and name != stem:
        rename = f" or rename the file to {name}{Path(path).suffix}" if re.fullmatch(r"[a-z0-9_]+", name) else ""
        problems.append(Problem(path, _line_of(root, ["name"]), "name", f"expected the file stem {stem!r}, got "
                                                                        f"{name!r}. Fix: set 'name: {stem}'{rename}"))
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems += [Problem(path, _line_of(root, visible_loc(tuple(error["loc"]))),
                             field_path(tuple(error["loc"])) or None, describe(error)) for error in exc.errors()]
    except RecursionError:
        problems.append(Problem(path, None, None, "the document is nested too deeply. Fix: nest less"))
    if problems:
        raise ScenarioError(sorted(problems, key=lambda p: p.line or 0))
    scenario._source = ScenarioSource(path, text)
    return scenario, _line_of(root, ["name"])


@dataclass(frozen=True, eq=False)
class ScenarioSource:
    """The file a scenario was loaded from, for messages about a field found later (e.g. after a run)."""

    path: str
    text: str

    @functools.cached_property
    def _root(self) -> yaml.Node | None:
        return _parse_yaml(self.text, self.path)[1]

    def line_of(self, loc: Sequence[int | str]) -> int | None:
        """Line of the field at ``loc`` (e.g. ``("script", "planer")``), or of its nearest parent present."""
        return _line_of(self._root, loc) if self._root is not None else None


def problem_at(scenario: Scenario, loc: Sequence[int | str], text: str) -> Problem:
    """A ``Problem`` at the file:line of ``scenario``'s field ``loc``; a scenario built in code names itself."""
    source = scenario._source
    if not isinstance(source, ScenarioSource):
        return Problem(f"scenario {scenario.name!r}", None, field_path(tuple(loc)) or None, text)
    return Problem(source.path, source.line_of(loc), field_path(tuple(loc)) or None, text)


def parse_scenario(text: str, *, path: str = "<scenario>", stem: str | None = None) -> Scenario:
    """Validate scenario YAML text; ``stem`` (when given) is what ``name`` must equal."""
    return _parse(text, path, stem)[0]


def _load(path: Path) -> tuple[Scenario, int]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError([Problem(str(path), None, None, f"the file is not UTF-8 text ({exc.reason} at byte "
                                                            f"{exc.start}). Fix: save it as UTF-8")]) from exc
    except OSError as exc:
        raise ScenarioError([Problem(str(path), None, None, f"cannot read the file ({exc.strerror or exc}). "
                                                            "Fix: check the path")]) from exc
    return _parse(text, str(path), path.stem)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Load and validate one scenario file; its ``name`` must equal the file stem."""
    return _load(Path(path))[0]


def load_scenarios(directory: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Scenario]:
    """Every ``*.yaml``/``*.yml`` scenario under ``directory`` (or under each of several folders, or the
    files themselves), sorted by name; names are unique across all of them; all problems in one error."""
    roots = [Path(directory)] if isinstance(directory, (str, os.PathLike)) else [Path(d) for d in directory]
    paths: list[Path] = []
    for root in roots:
        if root.is_file() and root.suffix in SUFFIXES:
            paths.append(root)
        elif root.is_dir():
            paths += sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        else:
            raise ScenarioError([Problem(str(root), None, None, "is not a directory or a scenario file. Fix: pass "
                                                                "the scenarios folder")])
    problems: list[Problem] = []
    found: dict[str, tuple[Scenario, str]] = {}
    for path in dict.fromkeys(paths):
        try:
            scenario, line = _load(path)
        except ScenarioError as exc:
            problems += exc.problems
            continue
        if scenario.name in found:
            problems.append(Problem(str(path), line, "name", f"duplicate scenario name {scenario.name!r}, also in "
                                                             f"{found[scenario.name][1]}. Fix: rename one of the "
                                                             "two files and its 'name'"))
        else:
            found[scenario.name] = (scenario, f"{path}:{line}")
    if problems:
        raise ScenarioError(problems)
    return [found[name][0] for name in sorted(found)]
