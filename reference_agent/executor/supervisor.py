"""Job_B's supervisor on Databricks: hold the model key, run the analyst's code in a child without it, always
leave a result JSON.

``jobb_entry.py`` (the ``spark_python_task`` file) calls ``main(sys.argv[1:])``.
Databricks runs that file inside an already running interpreter (the source is
exec'd, ``__file__`` is not defined), so nothing here relies on the entry's own
path, and this process never calls ``os._exit``: only the child does.

The key (``credential.py``): the cluster's ``spark_env_vars`` put
``GOOGLE_API_KEY`` in this process's environment. The supervisor takes it out of
``os.environ`` and makes itself non-dumpable before it starts anything; with
``--lm-direct MODEL`` it answers ``llm_query`` itself, over a loopback bridge
(``model_bridge.py``), and the child gets ``--lm-address`` instead, as a local
Job_B does. The child's environment is the executor's allow-list
(``sandbox.allowed_env``) and it confines itself before the code runs
(``sandbox.confinement_spec``, applied by ``confine.py``: Landlock, rlimits,
capabilities dropped as root) as far as the compute's kernel allows; what held
is the result JSON's ``confinement``.

It supervises as ``LocalJobRunner`` does on one machine: the executor runs as
``python -m <this package>.child`` (its own process group, a private work dir, a
hard limit of ``--timeout`` plus a grace); when the child ends without writing
its result — the analyst's code called ``os._exit``, was killed by a signal, or
outlived the hard limit — the supervisor writes it (``written_by: runner``,
status ``exit``, ``killed`` or ``timeout``). The code's own failures are
therefore results on both backends; a failed *task* means the platform or
Job_B's start-up failed.

Part of the executor package, so it ships in the payload wheel under the
payload's own top-level name (``rlm_jobb``) and imports nothing but the
standard library and its siblings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .confine import create_pids_cgroup, remove_cgroup
from .credential import ModelCredential, seal_process, take_model_credential
from .files import volume_mounts
from .process import PipeTap, kill_group
from .result import STATUSES, result_volume_path, runner_result, write_json_atomic
from .sandbox import DEFAULT_LIMITS, allowed_env, confinement_spec

HARD_GRACE_S = 5.0  # as LocalJobRunner's grace_s: more than the executor's own two-stage timeout
_DEFAULT_CAP = 1_000_000
_DEFAULT_MAX_CALLS = 64  # = main.DEFAULT_MAX_SUBLM_CALLS
# Options only the supervisor reads; the child would refuse them (it never calls a model itself).
_SUPERVISOR_OPTIONS = ("--lm-direct", "--max-sublm-tokens", "--require-confinement", "--no-confinement",
                       "--confine-limits")
_FLAGS = ("--require-confinement", "--no-confinement")


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


def child_pythonpath() -> list[str]:
    """The payload first (a library the platform put on ``sys.path``, not on ``PYTHONPATH``, must reach the
    child too), then this process's ``PYTHONPATH``."""
    return [import_root(), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]


def child_env(workdir: str) -> dict[str, str]:
    """The child's whole environment: the executor's allow-list, never the model key (``sandbox.allowed_env``)."""
    return allowed_env(workdir, child_pythonpath())


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jobb_entry.py", add_help=False)
    parser.add_argument("--artifact-path", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--iteration", required=True, type=int)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--output-cap", type=int, default=_DEFAULT_CAP)
    parser.add_argument("--max-sublm-calls", type=int, default=_DEFAULT_MAX_CALLS)
    parser.add_argument("--context-path")
    parser.add_argument("--namespace-path")
    parser.add_argument("--lm-exchange")
    parser.add_argument("--lm-direct", metavar="MODEL",
                        help="answer llm_query here, over Gemini's REST API with GOOGLE_API_KEY (and optional "
                             "GOOGLE_GEMINI_BASE_URL) from this process's environment; the child gets --lm-address")
    parser.add_argument("--max-sublm-tokens", type=int, default=None,
                        help="direct mode: sub-LM tokens left for the session (None: no cap)")
    parser.add_argument("--require-confinement", action="store_true",
                        help="refuse to run the code when the compute cannot give every protection")
    parser.add_argument("--no-confinement", action="store_true",
                        help="start the child without its confinement (RLM_EXECUTOR_CONFINEMENT=0); the environment "
                             "stays the allow-list and this process stays sealed")
    parser.add_argument("--confine-limits", type=json.loads, default=None,
                        help="the child's limits as a JSON object (sandbox.DEFAULT_LIMITS when not given)")
    args, _ = parser.parse_known_args(argv)
    return args


def _child_argv(argv: list[str]) -> list[str]:
    """``argv`` without the supervisor's own options (and their values)."""
    out: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        name = item.split("=", 1)[0]
        if name in _SUPERVISOR_OPTIONS:
            skip = "=" not in item and name not in _FLAGS
            continue
        out.append(item)
    return out


def _block_folders(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(write, read): the folders of the block's files, as the local runner gives its executor (``BlockFolders``)."""
    write = {os.path.dirname(os.path.abspath(p)) for p in (args.artifact_path, args.namespace_path) if p}
    if args.lm_exchange:
        write.add(os.path.abspath(args.lm_exchange))
    read = {os.path.dirname(os.path.abspath(args.context_path))} if args.context_path else set()
    return sorted(write), sorted(read - write)


def _start_bridge(args: argparse.Namespace, credential: ModelCredential) -> Any:
    from .direct_lm import GeminiAnswers
    from .model_bridge import ModelBridge

    answers = GeminiAnswers(args.lm_direct, credential, max_tokens=args.max_sublm_tokens)
    return ModelBridge(answers, max_calls=args.max_sublm_calls)


def main(argv: list[str] | None = None) -> int:
    """Run one block under supervision; the task's exit code (0 when the executor wrote its result cleanly)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _arguments(argv)
    credential = take_model_credential()  # whatever the cluster put there leaves os.environ before anything starts
    unsealed = seal_process()
    if unsealed:
        print(f"jobb: this process's /proc entry stays readable to the code ({unsealed})", file=sys.stderr)
    artifact = Path(args.artifact_path)
    result_path = Path(result_volume_path(args.artifact_path, args.run_id, args.iteration))
    child_argv = _child_argv(argv)
    bridge = _start_bridge(args, credential) if args.lm_direct else None
    if bridge is not None:
        child_argv += ["--lm-address", bridge.address]
    mounts = volume_mounts()
    if mounts:
        child_argv += ["--volume-mounts", os.pathsep.join(mounts)]
    workdir = tempfile.mkdtemp(prefix="rlm-jobb-")
    cgroup = None
    if not args.no_confinement:
        limits = DEFAULT_LIMITS if args.confine_limits is None else args.confine_limits
        cgroup = create_pids_cgroup(limits["processes"]) if limits.get("processes") else None
        write, read = _block_folders(args)
        spec = confinement_spec(python=sys.executable, workdir=workdir, write=write,
                                read=[*read, *(os.path.abspath(p) for p in child_pythonpath())],
                                connect_ports=[bridge.port] if bridge is not None else [], limits=limits,
                                cgroup=cgroup, required=args.require_confinement)
        child_argv += ["--confine", json.dumps(spec, separators=(",", ":"))]
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(child_command(child_argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=workdir, env=child_env(workdir), start_new_session=True)
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
    finally:
        if bridge is not None:
            bridge.close()
        if cgroup is not None:
            remove_cgroup(cgroup)
        shutil.rmtree(workdir, ignore_errors=True)
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
    if bridge is not None:
        result["sublm_calls"] = bridge.calls  # what the dead child asked the model, seen from here
    write_json_atomic(result_path, result)
    return 1  # the task FAILED, as LocalJobRunner reports it; the result JSON says how


def _valid_result(path: Path) -> bool:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("status") in STATUSES
