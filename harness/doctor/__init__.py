"""``rlm-conformance doctor``: check the setup before a recording, and say what to fix.

``run_local_doctor()`` checks the local install and the project (``project.py``);
``reference_agent.conformance.doctor.run.run_databricks_doctor()`` the workspace of the Databricks backend (imported lazily: it
needs the ``databricks`` extra). Both return a
``DoctorReport`` of ``Finding(check, level, message, fix)``; ``render_table`` / ``render_json`` print it.
Names are imported on first use (PEP 562): the CLI's parser imports ``settings_flags`` on every start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .findings import DoctorReport, Finding, Level
    from .local import run_local_doctor
    from .render import render_json, render_table

_WHERE = {"DoctorReport": "findings", "Finding": "findings", "Level": "findings", "run_local_doctor": "local",
          "render_json": "render", "render_table": "render"}
__all__ = ["DoctorReport", "Finding", "Level", "render_json", "render_table", "run_local_doctor"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
