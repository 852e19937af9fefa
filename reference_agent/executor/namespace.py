"""The REPL namespace that outlives one Job_B run: a pickle snapshot next to the artifacts.

RLM code builds buffers in variables over several iterations and answers with
``FINAL_VAR(name)`` in a later step. Each Job_B run is a fresh process (on
Databricks, possibly another machine), so after a block runs the executor keeps
every picklable user variable in ``namespace_<run_id>.pkl`` in the volume and
loads it before the next block. Modules are kept by name and re-imported.
Values that cannot be pickled (a lambda, a socket, an open file) are dropped
and *named* in the result JSON, so the analyst knows to rebuild them.

The snapshot is read only from the run's own volume folder, written by this
executor: it is trusted storage, like the code artifacts beside it.
"""

from __future__ import annotations

import importlib
import os
import pickle
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MODULE_MARK = "__rlm_module__"


@dataclass
class SnapshotReport:
    kept: list[str] = field(default_factory=list)
    unpicklable: dict[str, str] = field(default_factory=dict)  # name -> why
    restored: list[str] = field(default_factory=list)
    restore_error: str | None = None


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
    for name, value in saved.items():
        if isinstance(value, tuple) and len(value) == 2 and value[0] == _MODULE_MARK:
            try:
                value = importlib.import_module(value[1])
            except ImportError:
                continue
        namespace[name] = value
        report.restored.append(name)


def save_snapshot(path: Path, namespace: dict[str, Any], reserved: tuple[str, ...], report: SnapshotReport) -> None:
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
            report.unpicklable[name] = f"{type(value).__name__}: {type(exc).__name__}"
            continue
        keep[name] = value
        report.kept.append(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(keep, handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
