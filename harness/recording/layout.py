"""Where a target's recordings live, what they are called, and the command that makes them again.

One module says it for cassettes and snapshots alike (pytest-recording keeps the same behind its ``vcr_cassette_dir``
and ``default_cassette_name`` fixtures)::

    cassettes/<scenario>.yaml                    the default target
    cassettes/<target>/<scenario>.yaml           any other target, by its stable name (``target_name``)
    cassettes/<backend>/[<target>/]<scenario>.yaml   a backend other than local: a folder of its own first
    snapshots/<scenario>.json, snapshots/<target>/<scenario>.json   the same rule, without backends

The default target is the one a project without ``target`` runs (the reference agent); its recordings sit at the
top of each folder, so the repository's own cassettes need no sub-folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DEFAULT_TARGET = "reference"
LOCAL_BACKEND = "local"


def folder_safe(name: str) -> str:
    """A target spec (``package.module:attr``) as one folder name (``package.module_attr``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def target_name(spec: str, profile: Any = None) -> str:
    """The stable name of a target: the profile's ``name`` (when the profile is about this target: its own
    ``target`` is unset or the same), else the spec made folder-safe — so ``--target other:app`` with the same
    profile never writes into the profiled agent's cassettes and snapshots. ``profile``: a target profile or None."""
    if profile is not None and profile.name and profile.target in (None, spec):
        return profile.name
    return folder_safe(spec)


def cassette_dir(base: Path, target: str, backend: str = LOCAL_BACKEND) -> Path:
    """The folder of ``target``'s cassettes (``target``: its stable name) under ``base``."""
    if backend != LOCAL_BACKEND:
        base = base / folder_safe(backend)
    return base if target == DEFAULT_TARGET else base / folder_safe(target)


def snapshot_dir(root: Path, target: str | None) -> Path:
    """The folder of ``target``'s snapshots under ``root`` (None: the default target's, or a scenario's own)."""
    return root if target in (None, DEFAULT_TARGET) else root / folder_safe(target)


def snapshot_path(root: Path, target: str | None, scenario: str) -> Path:
    return snapshot_dir(root, target) / f"{scenario}.json"


def target_flags(spec: str, profile_path: Path | str | None = None, backend: str = LOCAL_BACKEND) -> str:
    """The flags that name a run's target again: none for the default target on the local backend."""
    flags = "" if spec == DEFAULT_TARGET else f" --target {spec}"
    flags += "" if profile_path is None else f" --profile {shown_path(Path(profile_path))}"
    return flags + ("" if backend == LOCAL_BACKEND else f" --backend {backend}")


def rerecord_command(scenario: str, target: str = DEFAULT_TARGET, backend: str = LOCAL_BACKEND,
                     profile_path: Path | None = None) -> str:
    return f"rlm-conformance record --scenario {scenario}{target_flags(target, profile_path, backend)}"


def shown_path(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it (what a user types), else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
