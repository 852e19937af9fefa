"""``rlm-conformance doctor``: check the setup before a recording, and say what to fix.

``run_local_doctor()`` checks the local install; ``harness.doctor.databricks.run_databricks_doctor()`` the
workspace of the Databricks backend (imported lazily: it needs the ``databricks`` extra). Both return a
``DoctorReport`` of ``Finding(check, level, message, fix)``; ``render_table`` / ``render_json`` print it.
"""

from .findings import DoctorReport, Finding, Level
from .local import run_local_doctor
from .render import render_json, render_table

__all__ = ["DoctorReport", "Finding", "Level", "render_json", "render_table", "run_local_doctor"]
