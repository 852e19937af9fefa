"""BASE and HEAD of ``rlm-conformance diff``: a reports folder (its ``conformance.json``) or a JSON report file."""

from __future__ import annotations

from pathlib import Path

from ..report.json_report import ReportError, load_report_json
from ..report.write import FORMATS
from ..result import RunReport

JSON_REPORT = FORMATS["json"].filename


def report_path(source: str | Path, *, role: str) -> Path:
    """The JSON report ``source`` names; ``role`` (BASE or HEAD) says which argument a problem is about."""
    path = Path(source)
    if path.is_dir():
        inside = path / JSON_REPORT
        if not inside.is_file():
            raise ReportError(f"{role} {path}: a folder without {JSON_REPORT}. Fix: pass the --reports-dir of a "
                              f"`rlm-conformance run` that wrote the json format (it does by default), or the "
                              f"JSON report file itself.")
        return inside
    if not path.exists():
        raise ReportError(f"{role} {path}: no such folder or file. Fix: pass a reports folder or its "
                          f"{JSON_REPORT} (run `rlm-conformance run --reports-dir {path}` first).")
    return path


def load_run(source: str | Path, *, role: str) -> RunReport:
    """The run ``source`` holds, every trace with it; a bad file is a ``ReportError`` naming it and the fix."""
    path = report_path(source, role=role)
    try:
        return load_report_json(path)
    except ReportError as exc:
        raise ReportError(f"{role}: {exc}") from None
