"""The code-behaviour library: what the analyst's delegated code does, as data (``behaviours.yaml``).

A user extends it for their executor's conventions with ``explore --behaviours FILE`` (same shape; an entry
with an existing name replaces it, others are added after the built-in ones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import HarnessError

BUILTIN = Path(__file__).with_name("behaviours.yaml")
_SLUG = re.compile(r"^[a-z0-9_]+$")


class LibraryError(HarnessError):
    """A behaviours file that cannot be used; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Behaviour:
    name: str
    code: str
    sub_lm: int = 0
    sub_lm_delay: float = 0.0
    limits: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    escape_probe: bool = False
    """Code that tries to get out of its executor: its scenario runs under the harness's escape watch
    (``escape_probe: true``), and it is tried once, in a seed conversation, never drawn (it forks 512 processes
    where nothing stops it)."""

    def render(self, *, preview_chars: int) -> str:
        return self.code.replace("{preview_chars}", str(preview_chars))


@dataclass(frozen=True)
class Library:
    behaviours: tuple[Behaviour, ...]
    delegation_text: str = "```repl\n{code}\n```"

    def named(self, name: str) -> Behaviour:
        return next(b for b in self.behaviours if b.name == name)

    def wrap(self, code: str) -> str:
        """The analyst's whole answer carrying ``code`` (targets that delegate through a state key)."""
        return self.delegation_text.replace("{code}", code)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise LibraryError(f"--behaviours {path}: cannot read it ({exc}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("behaviours", []), list):
        raise LibraryError(f"--behaviours {path}: expected a mapping with a 'behaviours:' list (see {BUILTIN}).")
    return data


def _entry(raw: Any, path: Path, index: int) -> Behaviour:
    where = f"--behaviours {path}, behaviours[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("code"), str):
        raise LibraryError(f"{where}: an entry needs 'name' (a slug) and 'code' (Python text).")
    unknown = sorted(set(raw) - {"name", "code", "sub_lm", "sub_lm_delay", "limits", "escape_probe"})
    if unknown:
        raise LibraryError(f"{where}: unknown field(s) {', '.join(unknown)}; use name, code, sub_lm, sub_lm_delay, "
                           f"limits, escape_probe.")
    if not isinstance(raw.get("escape_probe", False), bool):
        raise LibraryError(f"{where}: escape_probe {raw['escape_probe']!r} must be true or false.")
    if not _SLUG.match(raw["name"]):
        raise LibraryError(f"{where}: name {raw['name']!r} must be lowercase letters, digits and underscores.")
    return Behaviour(name=raw["name"], code=raw["code"], sub_lm=int(raw.get("sub_lm", 0)),
                     sub_lm_delay=float(raw.get("sub_lm_delay", 0.0)), limits=dict(raw.get("limits") or {}),
                     escape_probe=raw.get("escape_probe", False))


def load_library(extra: Path | None = None) -> Library:
    """The built-in behaviours, extended (or overridden by name) by ``extra``."""
    base = _read(BUILTIN)
    entries = {b.name: b for i, raw in enumerate(base["behaviours"]) for b in [_entry(raw, BUILTIN, i)]}
    text = base.get("delegation_text", Library.delegation_text)
    if extra is not None:
        data = _read(extra)
        for i, raw in enumerate(data.get("behaviours", [])):
            behaviour = _entry(raw, extra, i)
            entries[behaviour.name] = behaviour
        text = data.get("delegation_text", text)
    if "{code}" not in text:
        raise LibraryError(f"delegation_text {text!r} has no {{code}} placeholder for the code.")
    return Library(behaviours=tuple(entries.values()), delegation_text=text)
