"""The snapshot verdict of ``rlm-conformance run``: the same file, serialisation and diff the pytest plugin uses.

``pytest`` compares a scenario's normalized trace with ``snapshots/<scenario>.json`` through syrupy; ``run``
must give the same verdict, so it serialises with syrupy's own ``JSONSnapshotExtension`` (byte-identical to
what ``--snapshot-update`` writes under pytest) and reports the result as the scenario's ``snapshot`` row.
``--snapshot-update`` writes the file (atomically) instead of failing.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..checks.base import CheckResult, failed, passed
from ..files import write_atomic
from ..trace.model import Trace
from .normalize import normalize_trace

SNAPSHOT_VERDICT = "snapshot"
DIFF_LINES = 40


def serialize_snapshot(trace: Trace) -> str:
    from syrupy.extensions.json import JSONSnapshotExtension

    return JSONSnapshotExtension().serialize(normalize_trace(trace))


def compare_snapshot(trace: Trace, path: Path, *, update: bool, update_command: str) -> CheckResult:
    text = serialize_snapshot(trace)
    try:
        stored = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        stored = None
    if stored == text:
        return passed(SNAPSHOT_VERDICT, f"The normalized trace equals {path}.")
    if update:
        write_atomic(path, text.encode("utf-8"), mode=0o644)
        return passed(SNAPSHOT_VERDICT, f"{'Updated' if stored is not None else 'Created'} {path} "
                                        f"(--snapshot-update): review the diff before committing it.")
    if stored is None:
        return failed(SNAPSHOT_VERDICT, f"Snapshot {path} does not exist. Create it with: {update_command}")
    diff = list(difflib.unified_diff(stored.splitlines(), text.splitlines(), "snapshot", "this run", n=2,
                                     lineterm=""))[2:]
    shown = diff[:DIFF_LINES] + ([f"... {len(diff) - DIFF_LINES} more diff lines"] if len(diff) > DIFF_LINES else [])
    return failed(SNAPSHOT_VERDICT, f"The normalized trace differs from {path} (- snapshot, + this run). If the "
                                    f"change is intended, review it and accept it with: {update_command}", shown)
