"""``[tool.rlm-conformance]`` in a project's ``pyproject.toml``: the settings both the CLI and pytest read.

The file is the first ``pyproject.toml`` found from the working folder upwards (as ruff and pytest look
for theirs); the search stops there whether or not it has the table, so a nested project never picks up
its parent's settings. Keys are written kebab-case (``llm-mode``); the snake_case spelling is accepted
too. Paths are relative to the file's folder. Precedence, everywhere: a command-line flag, then a pytest
ini option (``rlm_*``), then this table, then the built-in default.

    [tool.rlm-conformance]
    target = "my_agent.app:app"
    profile = "conformance/profile.yaml"
    scenarios = ["conformance/scenarios"]
    cassettes = "conformance/cassettes"
    snapshots = "conformance/snapshots"
    llm-mode = "replay"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError

TABLE = "tool.rlm-conformance"
PYPROJECT = "pyproject.toml"


class ProjectConfigError(ConfigError):
    """``[tool.rlm-conformance]`` in a pyproject.toml has an unknown key or a bad value."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class ProjectTable(BaseModel):
    """The table as written. Every key is optional; a missing key falls back to the built-in default."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, validate_by_name=True,
                              validate_by_alias=True)

    target: str | None = Field(default=None, description="reference, legacy or package.module:attr.")
    profile: str | None = Field(default=None, description="Target profile YAML, relative to this file's folder.")
    scenarios: str | list[str] | None = Field(default=None, description="Scenario folder(s) or file(s).")
    cassettes: str | None = Field(default=None, description="Cassette folder.")
    snapshots: str | None = Field(default=None, description="Snapshot folder.")
    llm_mode: Literal["replay", "scripted", "live"] | None = Field(default=None, description="replay|scripted|live.")
    session_service: str | None = Field(default=None, description="delta, adk-memory, adk-sqlite or module:factory.")
    backend: Literal["local", "databricks"] | None = Field(default=None, description="local or databricks.")


CHOICES = {"llm-mode": ("replay", "scripted", "live"), "backend": ("local", "databricks")}
KEYS = tuple(_kebab(name) for name in ProjectTable.model_fields)
"""The keys as documented (kebab-case)."""


@dataclass(frozen=True)
class ProjectConfig:
    """The table of one file with its paths made absolute; ``path`` is None when no pyproject.toml was found."""

    path: Path | None = None
    target: str | None = None
    profile: Path | None = None
    scenarios: tuple[Path, ...] | None = None
    cassettes: Path | None = None
    snapshots: Path | None = None
    llm_mode: str | None = None
    session_service: str | None = None
    backend: str | None = None

    def origin(self, key: str) -> str:
        """Where ``key``'s value came from, for messages: ``[tool.rlm-conformance] llm-mode in /p/pyproject.toml``."""
        return f"[{TABLE}] {_kebab(key)} in {self.path}"

    def layer(self, key: str) -> tuple[Any, str]:
        """``key``'s value in the table and where it came from: one layer for ``resolve``."""
        return getattr(self, key), self.origin(key)


DEFAULTS: dict[str, Any] = {"target": None, "profile": None, "scenarios": "scenarios", "cassettes": "cassettes",
                            "snapshots": "snapshots", "llm_mode": "replay", "session_service": "delta",
                            "backend": "local"}
"""Every setting's built-in default, by its key in the table (the CLI, the pytest plugin and the doctor read these)."""
DEFAULT_ORIGIN = "the built-in default"


def resolve(key: str, *layers: tuple[Any, str], default: Any = ...) -> tuple[Any, str]:
    """The first layer that gives ``key`` a value (a flag, a pytest ini option, the table — in the caller's order of
    precedence) with its origin, else the built-in default (``default`` overrides ``DEFAULTS[key]``)."""
    for value, origin in layers:
        if value is not None:
            return value, origin
    return (DEFAULTS[key] if default is ... else default), DEFAULT_ORIGIN


def find_pyproject(start: Path) -> Path | None:
    """The first ``pyproject.toml`` in ``start`` or one of its parents."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file():
            return candidate
    return None


def load_project_config(start: Path | None = None) -> ProjectConfig:
    """The settings of the pyproject.toml that governs ``start`` (default: the working folder)."""
    path = find_pyproject(start if start is not None else Path.cwd())
    if path is None:
        return ProjectConfig()
    return read_project_config(path)


def read_project_config(path: Path) -> ProjectConfig:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectConfigError(f"{path}: cannot read it as TOML ({exc}). Fix the file.") from None
    raw = document.get("tool", {}).get("rlm-conformance")
    if raw is None:
        return ProjectConfig(path=path)
    if not isinstance(raw, dict):
        raise ProjectConfigError(f"{path}: [{TABLE}] must be a table (key = value lines under [{TABLE}]).")
    try:
        table = ProjectTable.model_validate(raw)
    except ValidationError as exc:
        raise ProjectConfigError(f"{path}: invalid [{TABLE}]: " + "; ".join(_describe(e) for e in exc.errors())
                                 ) from None
    here = path.parent

    def absolute(value: str | None) -> Path | None:
        return here / value if value is not None else None

    scenarios = table.scenarios
    return ProjectConfig(
        path=path, target=table.target, profile=absolute(table.profile),
        scenarios=None if scenarios is None else tuple(here / s for s in ([scenarios] if isinstance(scenarios, str)
                                                                          else scenarios)),
        cassettes=absolute(table.cassettes), snapshots=absolute(table.snapshots), llm_mode=table.llm_mode,
        session_service=table.session_service, backend=table.backend)


def _describe(error: dict) -> str:
    from .scenario.diagnostics import closest

    key = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "extra_forbidden":
        guess = closest(_kebab(key), list(KEYS))
        fix = f"did you mean '{guess}'?" if guess else "remove it"
        return f"unknown key '{key}' ({fix}). Known keys: {', '.join(KEYS)}"
    if error["type"] == "literal_error":
        allowed = list(CHOICES[_kebab(key)])
        guess = closest(str(error.get("input")), allowed)
        hint = f" (did you mean '{guess}'?)" if guess else ""
        return f"key '{_kebab(key)}': {error['input']!r} is not one of {', '.join(allowed)}{hint}"
    return f"key '{_kebab(key)}': {error['msg']}, got {error.get('input')!r}"
