"""The JSON report: results and traces, written by ``run`` and re-rendered by ``rlm-conformance report``.

``render_json`` and ``load_report_json`` are inverses: a report loaded back
renders every other format exactly as the original did.
"""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..checks.base import CheckResult, Status
from ..errors import HarnessError
from ..result import RunReport, ScenarioResult
from ..trace.model import Trace

FORMAT_NAME = "rlm-conformance-report"
FORMAT_VERSION = 1
PLACEHOLDER = "@@rlm-conformance:results@@"  # where the results go in the rendered head


class ReportError(HarnessError):
    """A report file that cannot be read back, or a report format that does not exist."""


def _check_dict(check: CheckResult) -> dict[str, Any]:
    return {"name": check.name, "status": check.status.value, "explanation": check.explanation,
            "evidence": list(check.evidence)}


def _result_dict(result: ScenarioResult, trace: Trace | None = None) -> dict[str, Any]:
    trace = trace if trace is not None else result.trace
    return {
        "scenario": result.scenario, "description": result.description, "target": result.target,
        "llm_mode": result.llm_mode, "session_service": result.session_service, "ok": result.ok,
        "status": result.status, "declared": result.declared,
        "duration_s": result.duration_s, "error": result.error,
        "checks": [_check_dict(c) for c in result.checks],
        "trace": trace.model_dump(mode="json") if trace is not None else None,
    }


def report_dict(report: RunReport) -> dict[str, Any]:
    data = {
        "format": FORMAT_NAME, "version": FORMAT_VERSION, "ok": report.ok, "started_at": report.started_at,
        "machine": report.machine, "tool_version": report.tool_version, "extra": dict(report.extra),
        "results": [_result_dict(r, report.trace_at(i)) for i, r in enumerate(report.results)],
    }
    if report.subject != "scenario":  # only an audit's report says so: a run's JSON is as it always was
        data["subject"] = report.subject
    return data


def render_json(report: RunReport) -> str:
    """``report_dict`` as indented JSON: the same text ``json.dumps(report_dict(report), indent=2)`` gives."""
    return "".join(iter_json(report))


def iter_json(report: RunReport) -> Iterator[str]:
    """``render_json``'s text in pieces, one result at a time: one full trace in memory at a time, and a writer
    that streams the pieces to a file holds none of the text (harness/report/write.py)."""
    # default=repr: a trace value pydantic could not make JSON (it is typed Any) still leaves a readable trace.
    head = report_dict(dataclasses.replace(report, results=(), full_traces=None))
    if not report.results:
        yield json.dumps(head, indent=2, ensure_ascii=False, default=repr) + "\n"
        return
    head["results"] = [PLACEHOLDER]
    before, after = json.dumps(head, indent=2, ensure_ascii=False, default=repr).split(f'"{PLACEHOLDER}"', 1)
    yield before
    for i, result in enumerate(report.results):
        if i:
            yield ",\n    "
        piece = report.piece_at(i, "json")
        yield result_piece(result, report.trace_at(i)) if piece is None else piece
    yield after + "\n"


def result_piece(result: ScenarioResult, trace: Trace | None) -> str:
    """One entry of the report's ``results`` list as ``iter_json`` writes it (indented to its depth)."""
    return textwrap.indent(json.dumps(_result_dict(result, trace), indent=2, ensure_ascii=False, default=repr),
                           "    ").lstrip(" ")


def _result_from(data: dict[str, Any]) -> ScenarioResult:
    checks = tuple(CheckResult(name=c["name"], status=Status(c["status"]), explanation=c["explanation"],
                               evidence=tuple(c.get("evidence", ()))) for c in data["checks"])
    trace = Trace.model_validate(data["trace"]) if data.get("trace") is not None else None
    return ScenarioResult(scenario=data["scenario"], description=data["description"], target=data["target"],
                          llm_mode=data["llm_mode"], session_service=data["session_service"], checks=checks,
                          trace=trace, duration_s=float(data["duration_s"]), error=data.get("error"),
                          declared=data.get("declared"))


def load_report_json(path: str | os.PathLike[str]) -> RunReport:
    """Read a report written by ``render_json``; any problem is a ``ReportError`` naming the file."""
    path = Path(path)
    hint = "Fix: pass the conformance.json that `rlm-conformance run` wrote (--from PATH), or run again"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report file. {hint}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read the report ({exc}). {hint}.") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}). {hint}.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise ReportError(f"{path}: not an rlm-conformance report (no \"format\": \"{FORMAT_NAME}\"). {hint}.")
    if data.get("version") != FORMAT_VERSION:
        raise ReportError(f"{path}: report format version {data.get('version')!r}, this tool reads version "
                          f"{FORMAT_VERSION}. {hint} with this version of the tool.")
    try:
        results = tuple(_result_from(r) for r in data["results"])
        return RunReport(results=results, started_at=str(data["started_at"]), machine=str(data["machine"]),
                         tool_version=str(data["tool_version"]),
                         extra={str(k): str(v) for k, v in (data.get("extra") or {}).items()},
                         subject=str(data.get("subject") or "scenario"))
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        reason = " ".join(str(exc).split())[:300]
        raise ReportError(f"{path}: the report is incomplete or damaged ({type(exc).__name__}: {reason}). "
                          f"{hint}.") from None
