"""What supervising Job_B as a process takes here (one-shot or warm): the child's environment, and the capture
and kill helpers of ``reference_agent.executor.process`` (which Job_B's supervisor on Databricks shares)."""

from __future__ import annotations

import os
from pathlib import Path

# One source: the executor package holds them, so Job_B's payload wheel ships the same code.
from ..executor.process import CappedBuffer, PipeTap, kill_group, kill_group_except, proc_stat
from ..executor.sandbox import allowed_env

__all__ = ["EXECUTOR_SITE_VARIABLE", "PACKAGE_PARENT", "CappedBuffer", "PipeTap", "kill_group", "kill_group_except",
           "proc_stat", "scrubbed_env"]

# Where ``reference_agent`` is importable from: the child gets only this on PYTHONPATH (after the host's
# EXECUTOR_SITE_VARIABLE folders, if any).
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
# Folders (os.pathsep-separated) the host puts first on the child's PYTHONPATH, e.g. a site folder whose
# sitecustomize sets up every Python process of a test run (rlm-conformance's scenario clock: harness/run/clock.py).
# The variable itself does not reach the code.
EXECUTOR_SITE_VARIABLE = "RLM_EXECUTOR_SITE"


def scrubbed_env(workdir: str) -> dict[str, str]:
    """The executor's allow-listed environment (``executor/sandbox.py``, shared with Job_B on Databricks)."""
    site = [p for p in os.environ.get(EXECUTOR_SITE_VARIABLE, "").split(os.pathsep) if p]
    return allowed_env(workdir, [*site, PACKAGE_PARENT])
