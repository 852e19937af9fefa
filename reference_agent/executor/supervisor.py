"""Job_B's supervisor on Databricks: run the executor as a child process and always leave a result JSON.

``jobb_entry.py`` (the ``spark_python_task`` file) calls ``main(sys.argv[1:])``.
Databricks runs that file inside an already running interpreter (the source is
exec'd, ``__file__`` is not defined), so nothing here relies on the entry's own
path, and this process never calls ``os._exit``: only the child does.

It supervises as ``LocalJobRunner`` does on one machine: the executor runs as
``python -m <this package>.child`` (its own process group, a hard limit of
``--timeout`` plus a grace); when the child ends without writing its result —
the analyst's code called ``os._exit``, was killed by a signal, or outlived the
hard limit — the supervisor writes it (``written_by: runner``, status ``exit``,
``killed`` or ``timeout``). The code's own failures are therefore results on
both backends; a failed *task* means the platform or Job_B's start-up failed.

Part of the executor package, so it ships in the payload wheel under the
payload's own top-level name (``rlm_jobb``) and imports nothing but the
standard library and its siblings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .process import PipeTap, kill_group
from .result import STATUSES, result_volume_path, runner_result, write_json_atomic

HARD_GRACE_S = 5.0  # as LocalJobRunner's grace_s: more than the executor's own two-stage timeout
_DEFAULT_CAP = 1_000_000


def import_root() -> str:
    """The folder this package is imported from (a site-packages, an unpacked wheel, or a wheel file itself)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range((__package__ or "").count(".") + 1):
        here = os.path.dirname(here)
    return here


def child_command(argv: list[str]) -> list[str]:
    """``python -m <package>.child ARGV`` with this interpreter's isolation flags (``-S``, ``-s``)."""
    flags = (["-S"] if sys.flags.no_site else []) + (["-s"] if sys.flags.no_user_site else [])
    return [sys.executable, *flags, "-m", f"{__package__}.child", *argv]


def child_env() -> dict[str, str]:
    """This process's environment with the payload importable: a library the platform put on ``sys.path``
    (not on ``PYTHONPATH``) must reach the child too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (import_root(), env.get("PYTHONPATH", "")) if p)
    return env


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jobb_entry.py", add_help=False)
    parser.add_argument("--artifact-path", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--iteration", required=True, type=int)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--output-cap", type=int, default=_DEFAULT_CAP)
    args, _ = parser.parse_known_args(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run one block under supervision; the task's exit code (0 when the executor wrote its result cleanly)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _arguments(argv)
    artifact = Path(args.artifact_path)
    result_path = Path(result_volume_path(args.artifact_path, args.run_id, args.iteration))
    started = time.perf_counter()
    proc = subprocess.Popen(child_command(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=child_env(), start_new_session=True)
    out, err = PipeTap(proc.stdout, args.output_cap), PipeTap(proc.stderr, args.output_cap)
    limit = args.timeout + HARD_GRACE_S if args.timeout > 0 else None
    hard_timeout = False
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        hard_timeout = True
        kill_group(proc.pid)
        proc.wait()
    finally:
        kill_group(proc.pid)  # whatever the code started in its group goes too; it could hold the pipes open
    out.join(2.0)
    err.join(2.0)
    duration = round(time.perf_counter() - started, 6)
    sys.stdout.write(out.sink.text())
    sys.stderr.write(err.sink.text())
    sys.stdout.flush()
    sys.stderr.flush()

    returncode = proc.returncode
    if _valid_result(result_path):
        return returncode if returncode and returncode > 0 else (1 if returncode else 0)  # the executor's own code
    result = runner_result(run_id=args.run_id, iteration=args.iteration, artifact=artifact, returncode=returncode,
                           hard_timeout=hard_timeout, timeout_s=args.timeout, grace_s=HARD_GRACE_S,
                           duration_s=duration, stdout=out.sink, stderr=err.sink)
    write_json_atomic(result_path, result)
    return 1  # the task FAILED, as LocalJobRunner reports it; the result JSON says how


def _valid_result(path: Path) -> bool:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("status") in STATUSES
