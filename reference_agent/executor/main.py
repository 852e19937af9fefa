"""Job_B entry point: run one artifact, always leave ``result_{run_id}_iter{n}.json`` beside it.

Everything the code does is caught (``BaseException``), so the only ways to
leave without a result are ``os._exit``, a signal or the runner's hard kill;
the job runner writes the result in those cases.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Callable

from .capture import CappedStream
from .final import has_final_call
from .lm_client import LmClient
from .namespace import LiveNamespace, SnapshotReport, load_snapshot, save_snapshot
from .repl import RESERVED_NAMES, Repl
from .result import (
    EXECUTOR_TIMEOUT_GRACE_S,
    bound_traceback,
    new_result,
    result_filename,
    write_json_atomic,
)

# Defaults mirror reference_agent.config.AgentSettings (not imported: Job_B stays standalone).
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_OUTPUT_CAP = 1_000_000
DEFAULT_MAX_SUBLM_CALLS = 64


class ExecutionTimeout(BaseException):
    """Raised into running code at the soft timeout.

    A BaseException (like KeyboardInterrupt), so ``except Exception`` in
    analyst code does not swallow it and loop on past the deadline.
    """


class SoftTimeout:
    """SIGALRM-based timeout around the user code, in two stages.

    Stage 1 raises ``ExecutionTimeout`` into the code, so partial output survives
    and the result is written normally. If the code swallows it and is still
    running ``grace_s`` later, stage 2 calls ``on_stuck`` (write result, exit).
    """

    def __init__(self, timeout_s: float, on_stuck: Callable[[], None], grace_s: float = EXECUTOR_TIMEOUT_GRACE_S):
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.on_stuck = on_stuck
        self.fired = False
        self._active = False
        self._previous: Any = None

    @property
    def usable(self) -> bool:
        return (
            self.timeout_s > 0
            and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
        )

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self._active:
            return
        if not self.fired:
            self.fired = True
            signal.setitimer(signal.ITIMER_REAL, self.grace_s)
            raise ExecutionTimeout(
                f"execution exceeded the {self.timeout_s:g} s timeout; output up to that point is kept"
            )
        self.on_stuck()

    def __enter__(self) -> "SoftTimeout":
        if self.usable:
            self._previous = signal.signal(signal.SIGALRM, self._handle)
            self._active = True
            signal.setitimer(signal.ITIMER_REAL, self.timeout_s)
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False
        if self.usable:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reference_agent.executor", description=__doc__)
    parser.add_argument("--artifact-path", required=True, help="the Python file to run")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--iteration", required=True, type=int)
    parser.add_argument("--context-path", help="JSON file loaded as `context` (other suffixes: read as text)")
    parser.add_argument("--lm-address", help="host:port of the LM bridge answering llm_query")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="soft timeout in seconds (0: none)")
    parser.add_argument("--output-cap", type=int, default=DEFAULT_OUTPUT_CAP, help="bytes kept per stream")
    parser.add_argument("--max-sublm-calls", type=int, default=DEFAULT_MAX_SUBLM_CALLS)
    parser.add_argument("--lm-exchange", metavar="DIR",
                        help="answer llm_query through request/answer files in DIR, served by the job runner "
                             "(Job_B on a workspace with the caller's model: see exchange_lm.py)")
    parser.add_argument("--namespace-path", help="pickle snapshot of the REPL namespace, loaded before and saved "
                                                 "after the block (variables persist across runs)")
    parser.add_argument("--confine", metavar="SPEC",
                        help="confine the process before the code runs (Landlock, rlimits, pids cgroup): a JSON "
                             "object, or @FILE holding one; see confine.py. A warm worker takes it once, at start")
    return parser


def load_context(path: str | None) -> Any:
    if not path:
        return None
    file = Path(path)
    if file.suffix.lower() != ".json":
        return file.read_text(encoding="utf-8")
    with file.open(encoding="utf-8") as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as exc:
            raise ValueError(f"context file {path} is not valid JSON: {exc}") from None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback as the analyst needs it: from the artifact's first frame, without Job_B's own frames."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if os.path.dirname(os.path.abspath(f.filename)) != _PACKAGE_DIR]
    head = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    return "".join(head + traceback.format_exception_only(type(exc), exc))


def _message(exc: BaseException, cap: int = 4_000) -> str:
    """``str(exc)``, bounded, and never raising (analyst exceptions may have a broken ``__str__``)."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001
        text = f"<{type(exc).__name__} with an unprintable message>"
    return text if len(text) <= cap else text[:cap] + f" ... [{len(text) - cap} characters omitted]"


def _error(exc: BaseException, filename: str) -> dict[str, Any]:
    try:
        tb = bound_traceback(_user_traceback(exc, filename))
    except BaseException:  # noqa: BLE001 - a traceback that cannot be formatted must not lose the result
        tb = None
    return {"type": type(exc).__name__, "message": _message(exc), "traceback": tb}


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def _lm_client(args: argparse.Namespace, fallback: Callable[..., Any] | None = None) -> Any:
    """The bridge client, or with ``--lm-exchange`` the exchange one. Never a model client: this process runs
    the analyst's code, so it holds no model key (on Databricks the supervisor's bridge calls the model).

    ``fallback``: the client class when neither is given (Job_B on Databricks: a clear "no model" error).
    """
    if getattr(args, "lm_exchange", None):
        from .exchange_lm import ExchangeLmClient

        return ExchangeLmClient(args.lm_exchange, max_calls=args.max_sublm_calls)
    if fallback is not None and not args.lm_address:
        return fallback(max_calls=args.max_sublm_calls)
    return LmClient(args.lm_address, max_calls=args.max_sublm_calls)


def confine_or_fail(args: argparse.Namespace) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A one-shot run's ``--confine``: (report, None), or (report or None, error) when the code must not run."""
    if not getattr(args, "confine", None):
        return None, None
    # Imported only when asked for (ctypes): an unconfined Job_B on Databricks starts without it.
    from .confine import ConfinementUnavailable, InvalidConfinementSpec, apply_confinement, load_spec

    try:
        return apply_confinement(load_spec(args.confine)), None
    except ConfinementUnavailable as exc:
        return exc.report, {"type": "ConfinementUnavailable", "message": str(exc), "traceback": None}
    except InvalidConfinementSpec as exc:
        return None, {"type": "InvalidConfinementSpec", "message": str(exc), "traceback": None}


def run(args: argparse.Namespace, live: LiveNamespace | None = None, *,
        lm_fallback: Callable[..., Any] | None = None, confinement: dict[str, Any] | None = None) -> int:
    """Run one block and write its result JSON; 0, 2 if the result could not be written, 3 if refused.

    ``live`` is a warm executor's memory between blocks (``worker.py``): the
    namespace the last block left is reused instead of the snapshot while the
    snapshot on disk is still the one it wrote. A one-shot run passes None.
    ``confinement``: what the warm worker applied at start (it ignores a block's ``--confine``);
    a one-shot run applies its own ``--confine`` here, before the artifact is read, and when
    required confinement is unavailable writes a failed result and returns 3 without running it.
    """
    block = _Block(args, live, _lm_client(args, lm_fallback))
    refused: dict[str, Any] | None = None
    if live is None:
        confinement, refused = confine_or_fail(args)
    block.result["confinement"] = confinement
    block.started = time.perf_counter()  # the block's time starts once its confinement is in place
    if refused is not None:
        return block.refuse(refused)
    status, exit_code, error = block.execute(confinement)
    block.lm.close()
    block.keep_namespace(status)
    try:
        block.finish(status, exit_code, error)
    except OSError as exc:
        print(f"executor: could not write {block.result_path}: {exc}", file=sys.stderr)
        return 2
    return 0


class _Block:
    """One block's run: its result, captured streams, sub-LM client, REPL and namespace report, and the one write
    of its result (at the end, or from the stage-2 timeout while the code still runs)."""

    def __init__(self, args: argparse.Namespace, live: LiveNamespace | None, lm: Any) -> None:
        self.args, self.live, self.lm = args, live, lm
        self.artifact = Path(args.artifact_path)
        self.filename = str(self.artifact)
        self.result_path = self.artifact.parent / result_filename(args.run_id, args.iteration)
        self.result = new_result(run_id=args.run_id, iteration=args.iteration, artifact_path=args.artifact_path)
        self.stdout = CappedStream(args.output_cap)
        self.stderr = CappedStream(args.output_cap)
        self.repl: Repl | None = None
        self.kept: dict[str, Any] | None = None  # the namespace a warm process carried over from its last block
        self.started = time.perf_counter()
        self.written = threading.Lock()
        self.snapshot = SnapshotReport()

    def finish(self, status: str, exit_code: int | None, error: dict[str, Any] | None) -> None:
        # Called once: normally at the end, or from the stage-2 timeout while code still runs.
        if not self.written.acquire(blocking=False):
            return
        result, live, snapshot = self.result, self.live, self.snapshot
        result["status"] = status
        result["exit_code"] = exit_code
        result["error"] = error
        result["duration_s"] = round(time.perf_counter() - self.started, 6)
        for name, stream in (("stdout", self.stdout), ("stderr", self.stderr)):
            text, total, truncated = stream.snapshot()
            result[name], result[f"{name}_bytes"], result[f"{name}_truncated"] = text, total, truncated
        if self.repl is not None:
            result["final_answer"] = self.repl.final_answer
            result["final_var"] = self.repl.final_var
            result["final_error"] = self.repl.final_error
        result["sublm_calls"] = list(self.lm.calls)
        result["sublm_batches"] = list(self.lm.batches)
        result["namespace"] = {"kept": snapshot.kept, "unpicklable": snapshot.unpicklable,
                               "restored": snapshot.restored, "restore_error": snapshot.restore_error,
                               "source": snapshot.source,
                               "held_in_process": snapshot.held_in_process if live is not None else []}
        result["executor_process"] = {"mode": "warm" if live is not None else "one-shot",
                                      "blocks": live.blocks if live is not None else 1}
        write_json_atomic(self.result_path, result)

    def on_stuck(self) -> None:
        self.finish("timeout", None, {
            "type": "ExecutionTimeout",
            "message": f"execution exceeded the {self.args.timeout:g} s timeout and ignored the interruption; "
                       "the executor stopped it",
            "traceback": None,
        })
        sys.__stderr__.flush()
        os._exit(0)

    def refuse(self, refused: dict[str, Any]) -> int:
        """Required confinement is unavailable: a failed result, the code not run, exit code 3."""
        result = self.result
        result["executor_process"] = {"mode": "one-shot", "blocks": 1}
        duration_s = round(time.perf_counter() - self.started, 6)
        result.update(status="error", exit_code=1, error=refused, duration_s=duration_s)
        try:
            write_json_atomic(self.result_path, result)
        except OSError as exc:
            print(f"executor: could not write {self.result_path}: {exc}", file=sys.stderr)
        self.lm.close()
        print(f"executor: {refused['message']}", file=sys.stderr)
        return 3

    def execute(self, confinement: dict[str, Any] | None) -> tuple[str, int | None, dict[str, Any] | None]:
        """Load the block and its namespace, run it under the timeout with the streams captured; its status, exit
        code and error (everything the code raises is caught)."""
        timer = SoftTimeout(self.args.timeout, self.on_stuck)
        status, exit_code, error = "success", 0, None
        saved = sys.stdout, sys.stderr, sys.stdin
        try:
            code = self.artifact.read_text(encoding="utf-8")
            self.result["has_final_call"] = has_final_call(code)
            repl = self._load_repl()
            sys.stdout, sys.stderr, sys.stdin = self.stdout, self.stderr, io.StringIO("")
            with timer:
                repl.run(code, self.filename)
        except ExecutionTimeout as exc:
            status, exit_code = "timeout", None
            error = _error(exc, self.filename)
        except SystemExit as exc:
            exit_code = _exit_code(exc.code)
            status = "exit"
            if exc.code is not None and not isinstance(exc.code, int):
                self.stderr.write(f"{exc.code}\n")  # what the interpreter would print for sys.exit("message")
            if exit_code != 0:
                error = {"type": "SystemExit", "message": f"exit code {exit_code}", "traceback": None}
        except BaseException as exc:  # noqa: BLE001 - analyst code may raise anything; it all goes in the result
            status, exit_code = "error", 1
            error = _error(exc, self.filename)
            if confinement is not None:  # then confine.py is loaded: say which limit stopped the code, if one did
                _say_blocked(error, exc)
        finally:
            sys.stdout, sys.stderr, sys.stdin = saved
        if timer.fired and status != "timeout":
            # The code caught the timeout and finished anyway: it still ran past its deadline.
            status, exit_code = "timeout", None
            error = error or {"type": "ExecutionTimeout", "message": f"execution exceeded the {self.args.timeout:g} s timeout", "traceback": None}
        return status, exit_code, error

    def _load_repl(self) -> Repl:
        """The REPL on the block's context, with the namespace the warm process kept or the snapshot on disk."""
        args, live, snapshot = self.args, self.live, self.snapshot
        self.kept = live.take(Path(args.namespace_path)) if live is not None and args.namespace_path else None
        self.repl = Repl(context=load_context(args.context_path), lm=self.lm, namespace=self.kept)
        if self.kept is not None:
            snapshot.source = "process"
            snapshot.restored = sorted(n for n in self.kept if not n.startswith("__") and n not in RESERVED_NAMES)
        elif args.namespace_path:
            load_snapshot(Path(args.namespace_path), self.repl.namespace, snapshot)
            self.repl.restore_reserved()
        return self.repl

    def keep_namespace(self, status: str) -> None:
        """Save the namespace (snapshot, and the warm memory); a timed-out block's half-made changes are dropped,
        from the snapshot and the warm memory alike."""
        args, live, repl, snapshot = self.args, self.live, self.repl, self.snapshot
        if args.namespace_path and repl is not None and status != "timeout":
            try:
                save_snapshot(Path(args.namespace_path), repl.namespace, RESERVED_NAMES, snapshot,
                              known_unpicklable=live.unpicklable if self.kept is not None else None)
            except OSError as exc:
                snapshot.restore_error = f"namespace snapshot could not be saved: {exc}"
            if live is not None:
                live.keep(Path(args.namespace_path), repl.namespace, snapshot)
        elif live is not None:
            live.forget()


def _say_blocked(error: dict[str, Any], exc: BaseException) -> None:
    """Name the confinement limit that stopped the code in ``error``'s message, if one did."""
    from .confine import blocked_reason

    reason = blocked_reason(exc)
    if reason:
        said = f"{error['message']} " if error["message"] else ""
        error["message"] = f"{said}[blocked by the executor's confinement: {reason}]"


def main(argv: list[str] | None = None, *, lm_fallback: Callable[..., Any] | None = None) -> int:
    return run(build_parser().parse_args(argv), lm_fallback=lm_fallback)
