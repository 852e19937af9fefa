"""Differential runs: every scenario and service probe on two or more session services, compared.

``run_differential`` (``run``) runs and compares, ``DifferentialReport`` (``report``) holds what it found, and
``render_differential_markdown`` (``render``) writes it for a person.
"""

from __future__ import annotations

from ..contract.compare import Difference
from .render import render_differential_markdown
from .report import DifferentialReport
from .run import assert_only_declared, run_differential, run_differential_async

__all__ = ["Difference", "DifferentialReport", "assert_only_declared", "render_differential_markdown",
           "run_differential", "run_differential_async"]
