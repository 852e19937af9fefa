"""Job_B on Databricks: the script a ``spark_python_task`` runs (uploaded to the volume as text).

It runs ``python -m reference_agent.executor``'s ``main`` with the task
parameters (``--artifact-path /Volumes/... --run-id ... --iteration ...
[--context-path ...] [--namespace-path ...]``); the volume is mounted at
``/Volumes`` on the compute, so the executor reads the artifact and writes its
result JSON beside it as on a local disk.

It does so the way ``LocalJobRunner`` does on one machine: the executor runs
as a child process (its own process group, a hard limit of ``--timeout`` plus
a grace), and when the child ends without writing its result — the analyst's
code called ``os._exit``, was killed by a signal, or outlived the hard limit —
this script writes the result itself (``written_by: runner``, status ``exit``,
``killed`` or ``timeout``). The code's own failures are therefore results on
both backends, and a failed *task* means the platform or Job_B's start-up
failed (e.g. ``reference_agent`` is not installed on the compute).

``llm_query`` here: there is no ``--lm-address`` on a real workspace (nothing
on the cluster can reach the caller's LM bridge), so the executor calls the
model itself: the job runner passes ``--lm-direct MODEL`` (and
``--max-sublm-tokens``), and ``reference_agent.executor.direct_lm`` answers
with google-genai, ``GOOGLE_API_KEY`` coming from the cluster's
``spark_env_vars`` (the secret scope named by ``RLM_DATABRICKS_GENAI_SECRET``).
Without ``--lm-direct`` (a runner built without a model) the child installs an
LM client whose ``llm_query`` raises a clear error instead of the bridge's
"started without --lm-address".

Standalone on purpose: it imports only ``reference_agent`` (from the project
wheel installed on the compute) and the standard library.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD_FLAG = "--rlm-executor-child"
HARD_GRACE_S = 5.0  # as LocalJobRunner's grace_s: more than the executor's own two-stage timeout
_DEFAULT_CAP = 1_000_000


def _import_executor():
    try:
        from reference_agent.executor import main as executor_main
        from reference_agent.executor.lm_client import LmClient, SubLmError
    except ImportError as exc:
        raise SystemExit(
            f"Job_B cannot start: reference_agent is not importable on this compute ({exc}). Build the project "
            "wheel (python -m build --wheel), copy it to the volume and set RLM_DATABRICKS_WHEEL to its /Volumes path."
        ) from None
    return executor_main, LmClient, SubLmError


def _child(argv):
    """The executor itself (in the child process); llm_query in direct mode (``--lm-direct MODEL``)."""
    executor_main, LmClient, SubLmError = _import_executor()

    if "--lm-direct" not in argv:
        class NoModelLmClient(LmClient):
            """``llm_query`` on Databricks without ``--lm-direct``: there is no LM bridge on the cluster."""

            def query(self, prompts, *, batched):
                raise SubLmError(
                    "llm_query is not available in Job_B on Databricks without --lm-direct MODEL: there is no LM "
                    "bridge on the cluster, and this run was submitted without a model (the job runner was built "
                    "without one). Direct mode also needs GOOGLE_API_KEY from the secret scope named by "
                    "RLM_DATABRICKS_GENAI_SECRET. Answer from the data in `context` instead."
                )

        executor_main.LmClient = NoModelLmClient
    code = executor_main.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # As python -m reference_agent.executor: threads the code left running must not keep Job_B alive.
    os._exit(code)


def _supervise(argv):
    _import_executor()  # fail the task (an infrastructure error) when the wheel is missing
    from reference_agent.backends.process import PipeTap, kill_group
    from reference_agent.executor.result import STATUSES, result_volume_path, runner_result, write_json_atomic

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--artifact-path", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--iteration", required=True, type=int)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--output-cap", type=int, default=_DEFAULT_CAP)
    args, _ = parser.parse_known_args(argv)
    artifact = Path(args.artifact_path)
    result_path = Path(result_volume_path(args.artifact_path, args.run_id, args.iteration))

    command = [sys.executable, *(["-s"] if sys.flags.no_user_site else []), os.path.abspath(__file__),
               CHILD_FLAG, *argv]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
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

    returncode = proc.returncode
    if _valid_result(result_path, STATUSES):
        return returncode if returncode and returncode > 0 else (1 if returncode else 0)  # the executor's own code
    result = runner_result(run_id=args.run_id, iteration=args.iteration, artifact=artifact, returncode=returncode,
                           hard_timeout=hard_timeout, timeout_s=args.timeout, grace_s=HARD_GRACE_S,
                           duration_s=duration, stdout=out.sink, stderr=err.sink)
    write_json_atomic(result_path, result)
    return 1  # the task FAILED, as LocalJobRunner reports it; the result JSON says how


def _valid_result(path, statuses):
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("status") in statuses


def _main(argv):
    if argv[:1] == [CHILD_FLAG]:
        return _child(argv[1:])
    return _supervise(argv)


if __name__ == "__main__":
    _code = _main(sys.argv[1:])
    if _code:
        raise SystemExit(_code)
