"""Targets that end the process building them, as a segfault or the OOM killer would: for ``run -j N``'s
worker-death handling (tests/harness/test_parallel_run.py). Never run them in-process (``-j 1``)."""

from __future__ import annotations

import os
import signal

from harness.targets.base import BuiltTarget, TargetEnvironment


def killed(env: TargetEnvironment) -> BuiltTarget:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def exits(env: TargetEnvironment) -> BuiltTarget:
    os._exit(3)
