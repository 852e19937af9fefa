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
import signal
import subprocess
import sys
import threading
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


class _Capped:
    """Head of a pipe up to ``cap`` bytes plus a byte count (LocalJobRunner's _CappedBuffer, with threads)."""

    def __init__(self, stream, cap):
        self.cap = max(0, cap)
        self.head = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream):
        while True:
            chunk = stream.read(65536)
            if not chunk:
                return
            self.total += len(chunk)
            room = self.cap - len(self.head)
            if room > 0:
                self.head += chunk[:room]

    def join(self, timeout):
        self._thread.join(timeout)

    def text(self):
        return bytes(self.head).decode("utf-8", errors="replace")


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _supervise(argv):
    _import_executor()  # fail the task (an infrastructure error) when the wheel is missing
    from reference_agent.executor.final import has_final_call
    from reference_agent.executor.result import (
        STATUSES,
        new_result,
        result_volume_path,
        write_json_atomic,
    )

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
    out, err = _Capped(proc.stdout, args.output_cap), _Capped(proc.stderr, args.output_cap)
    limit = args.timeout + HARD_GRACE_S if args.timeout > 0 else None
    hard_timeout = False
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        hard_timeout = True
        _kill_group(proc.pid)
        proc.wait()
    finally:
        _kill_group(proc.pid)  # whatever the code started in its group goes too; it could hold the pipes open
    out.join(2.0)
    err.join(2.0)
    duration = round(time.perf_counter() - started, 6)
    sys.stdout.write(out.text())
    sys.stderr.write(err.text())

    returncode = proc.returncode
    if _valid_result(result_path, STATUSES):
        return returncode if returncode and returncode > 0 else (1 if returncode else 0)  # the executor's own code
    result = new_result(run_id=args.run_id, iteration=args.iteration, artifact_path=str(artifact))
    result["written_by"] = "runner"
    result["duration_s"] = duration
    for name, buffer in (("stdout", out), ("stderr", err)):
        result[name], result[f"{name}_bytes"] = buffer.text(), buffer.total
        result[f"{name}_truncated"] = buffer.total > len(buffer.head)
    try:
        result["has_final_call"] = has_final_call(artifact.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        pass
    if hard_timeout:
        message = (f"Job_B exceeded the hard limit of {limit:g} s (timeout {args.timeout:g} s + grace "
                   f"{HARD_GRACE_S:g} s) and was killed")
        result.update(status="timeout", exit_code=None, signal=int(signal.SIGKILL))
        result["error"] = {"type": "HardTimeout", "message": message, "traceback": None}
    elif returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        result.update(status="killed", exit_code=returncode, signal=-returncode)
        result["error"] = {"type": "Killed", "message": f"Job_B was killed by {name} before writing its result",
                           "traceback": None}
    else:
        result.update(status="exit", exit_code=returncode)
        result["error"] = {"type": "Exit", "message": f"Job_B exited with code {returncode} before writing its "
                                                      f"result (os._exit or a crash)", "traceback": None}
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
