"""The REPL namespace that outlives one Job_B run: a pickle snapshot next to the artifacts.

RLM code builds buffers in variables over several iterations and answers with
``FINAL_VAR(name)`` in a later step. Each Job_B run is a fresh process (on
Databricks, possibly another machine), so after a block runs the executor keeps
every picklable user variable in ``namespace_<run_id>.pkl`` in the volume and
loads it before the next block. Modules are kept by name and re-imported.
Values that cannot be pickled (a lambda, a socket, an open file) are dropped
and *named* in the result JSON, so the analyst knows to rebuild them.

A warm executor (``worker.py``, one process per session on this machine) also
keeps the namespace itself in memory as a ``LiveNamespace``: the next block
skips the unpickling, and unpicklable values live on while the process does.
The live namespace is used only while the snapshot on disk is still the one
this process wrote; if anything else replaced or removed it, the snapshot wins.

The snapshot is read only from the run's own volume folder, written by this
executor: it is trusted storage, like the code artifacts beside it.
"""

from __future__ import annotations

import importlib
import pickle
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import write_atomic

_MODULE_MARK = "__rlm_module__"


@dataclass
class SnapshotReport:
    kept: list[str] = field(default_factory=list)
    # name -> why, for values this block made (or changed) that the snapshot cannot keep. A warm process
    # still holds those of earlier blocks; they are not named again, so both kinds of run report alike.
    unpicklable: dict[str, str] = field(default_factory=dict)
    held_in_process: list[str] = field(default_factory=list)  # warm: every unpicklable value still held
    restored: list[str] = field(default_factory=list)
    restore_error: str | None = None
    # Where the block's earlier variables came from: "process" (a warm executor's memory),
    # "snapshot" (the pickle file) or "new" (nothing before this block).
    source: str = "new"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What identifies one written snapshot: a save replaces the file, so the inode changes."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


@dataclass
class LiveNamespace:
    """The namespace a warm executor keeps between blocks, and the snapshot it corresponds to."""

    path: Path | None = None
    namespace: dict[str, Any] | None = None
    stamp: tuple[int, int, int] | None = None
    blocks: int = 0  # blocks this process has run
    unpicklable: dict[str, int] = field(default_factory=dict)  # name -> id(value) not in the snapshot

    def take(self, path: Path) -> dict[str, Any] | None:
        """The kept namespace if it belongs to ``path`` and the snapshot there is still ours, else None."""
        namespace, self.namespace = self.namespace, None
        if namespace is None or path != self.path or _stamp(path) != self.stamp:
            self.unpicklable = {}
            return None
        return namespace

    def keep(self, path: Path, namespace: dict[str, Any], report: SnapshotReport) -> None:
        """Keep ``namespace`` for the next block; call after the snapshot was saved (or failed to be)."""
        self.path, self.namespace, self.stamp = path, namespace, _stamp(path)
        self.unpicklable = {name: id(namespace[name]) for name in report.held_in_process if name in namespace}

    def forget(self) -> None:
        self.namespace, self.unpicklable = None, {}


def _user_names(namespace: dict[str, Any], reserved: tuple[str, ...]) -> list[str]:
    return sorted(n for n in namespace if not n.startswith("__") and n not in reserved)


def load_snapshot(path: Path, namespace: dict[str, Any], report: SnapshotReport) -> None:
    """Put the previous runs' variables into ``namespace``; a broken snapshot is reported, not fatal."""
    if not path.exists():
        return
    try:
        saved: dict[str, Any] = pickle.loads(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - a corrupt snapshot must not stop the new block
        report.restore_error = f"namespace snapshot {path.name} could not be loaded ({type(exc).__name__}: {exc})"
        return
    report.source = "snapshot"
    for name, value in saved.items():
        if isinstance(value, tuple) and len(value) == 2 and value[0] == _MODULE_MARK:
            try:
                value = importlib.import_module(value[1])
            except ImportError:
                continue
        namespace[name] = value
        report.restored.append(name)


def save_snapshot(path: Path, namespace: dict[str, Any], reserved: tuple[str, ...], report: SnapshotReport,
                  known_unpicklable: dict[str, int] | None = None) -> None:
    """Pickle every user variable that can be; ``known_unpicklable`` (name -> id) were reported before."""
    known = known_unpicklable or {}
    keep: dict[str, Any] = {}
    for name in _user_names(namespace, reserved):
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            keep[name] = (_MODULE_MARK, value.__name__)
            report.kept.append(name)
            continue
        try:
            pickle.dumps(value)
        except Exception as exc:  # noqa: BLE001 - any pickling failure means "not kept"
            report.held_in_process.append(name)
            if known.get(name) != id(value):
                report.unpicklable[name] = f"{type(value).__name__}: {type(exc).__name__}"
            continue
        keep[name] = value
        report.kept.append(name)
    write_atomic(path, pickle.dumps(keep))
