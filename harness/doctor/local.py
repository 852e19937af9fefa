"""``rlm-conformance doctor`` without ``--databricks``: the local install, and the project in the working folder."""

from __future__ import annotations

import importlib.util
import sys

from .findings import DoctorReport, Finding, error, ok, skipped, warning
from .project import project_findings

TITLE = "rlm-conformance doctor"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def run_local_doctor() -> DoctorReport:
    findings: list[Finding] = []
    version = ".".join(map(str, sys.version_info[:3]))
    findings.append(ok("python", f"Python {version}") if sys.version_info >= (3, 11) else
                    error("python", f"Python {version}; rlm-conformance needs 3.11 or later", "use Python 3.11+"))
    for module, why in (("google.adk", "the agent framework"), ("duckdb", "the local backend's tables"),
                        ("vcr", "cassette replay")):
        findings.append(ok(module, f"{module} is installed ({why})") if _installed(module) else
                        error(module, f"{module} is missing ({why})", "pip install rlm-conformance"))
    if _installed("databricks.sdk"):
        findings.append(ok("databricks-sdk", "installed: `doctor --databricks` checks a workspace"))
    else:
        findings.append(warning("databricks-sdk", "not installed: --backend databricks and doctor --databricks "
                                                  "need it", "pip install 'rlm-conformance[databricks]'"))
    findings.append(skipped("workspace checks", "not run: pass --databricks to check the workspace of "
                                                "DATABRICKS_HOST / DATABRICKS_TOKEN / RLM_DATABRICKS_*"))
    findings += project_findings()
    return DoctorReport(TITLE, tuple(findings))
