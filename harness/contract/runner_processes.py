"""Concurrent runners as OS processes on one durable session service (a file store, a server).

``run_processes(spec, folder)`` starts one child per runner (``sys.executable -m
harness.contract.runner_processes``), each building its own service from ``spec`` — a built-in contract
profile name or ``module:attr``, the same words as ``--session-service`` — on the shared ``folder/store``,
then running ``runners.run_runner``. The children meet at a file barrier before each phase (each touches
``<phase>.<runner>.ready`` and waits for the others', or their ``gone`` mark), so their calls interleave;
each writes its history as JSONL, flushed per call. After both exit, the parent reads every session once and
checks the histories (``history_check``).

A service whose second opener is refused (DuckDB admits one process per file: ``DatabaseLockedError``)
records the refused ``open`` and stops: nothing raced, and the result says so instead of judging.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..targets.session_services import aclose_service
from .history import HistoryWriter, error_text, now, read_history
from .history_check import check_history
from .runners import PROCESSES, ROUNDS, RunnersResult, final_reads, overlapped, process_names, run_runner

TIMEOUT_S = 120.0
_POLL_S = 0.002


def _build(spec: str, store: Path):
    from .profiles import get_profile

    return get_profile(spec).build(store)


async def _child(spec: str, folder: Path, process: str, processes: list[str], rounds: int) -> None:
    writer = HistoryWriter(process, folder / f"{process}.jsonl")
    start = now()
    try:
        service = _build(spec, folder / "store")
    except Exception as error:  # noqa: BLE001 - recorded: the parent reports why the runners could not race
        writer.record("open", start=start, end=now(), ok=False, error=error_text(error))
        (folder / f"{process}.gone").touch()
        writer.close()
        return
    writer.record("open", start=start, end=now())

    async def barrier(phase: str) -> None:
        (folder / f"{phase}.{process}.ready").touch()
        others = [p for p in processes if p != process]
        deadline = time.monotonic() + TIMEOUT_S
        while not all((folder / f"{phase}.{p}.ready").exists() or (folder / f"{p}.gone").exists() for p in others):
            if time.monotonic() > deadline:
                raise TimeoutError(f"runner {process}: the other runners never reached phase {phase}")
            await asyncio.sleep(_POLL_S)

    try:
        await run_runner(service, writer, barrier, processes, rounds)
    finally:
        (folder / f"{process}.gone").touch()
        writer.close()
        await aclose_service(service)


async def run_processes(spec: str, folder: Path, *, processes: int = PROCESSES, rounds: int = ROUNDS,
                        timeout_s: float = TIMEOUT_S) -> RunnersResult:
    """The runners as OS processes on the service ``spec`` builds in ``folder/store``; see the module docstring."""
    folder = Path(folder)
    (folder / "store").mkdir(parents=True, exist_ok=True)
    names = process_names(processes)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the spec imports as here
    started = time.monotonic()
    children = [subprocess.Popen([sys.executable, "-m", __name__, json.dumps(
        {"spec": spec, "folder": str(folder), "process": p, "processes": names, "rounds": rounds})],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) for p in names]
    problems = []
    for name, child in zip(names, children):
        try:
            _, stderr = child.communicate(timeout=max(1.0, timeout_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            child.kill()
            _, stderr = child.communicate()
            problems.append(f"runner {name} did not finish within {timeout_s:.0f} s and was killed")
        if child.returncode:
            problems.append(f"runner {name} exited with {child.returncode}: {stderr.strip()[-800:]}")
    ops = tuple(op for p in names if (folder / f"{p}.jsonl").exists() for op in read_history(folder / f"{p}.jsonl"))
    refused = [op for op in ops if op.kind == "open" and not op.ok]
    if refused and len(refused) == len(names):  # no runner could build it: the spec is wrong, not the store
        raise RuntimeError(f"concurrent runners: no runner process could build the session service {spec!r}: "
                           f"{refused[0].error}")
    if refused:
        why = "; ".join(f"runner {op.process} could not open the service ({op.error})" for op in refused)
        return RunnersResult(service=spec, mode="processes", verdict=check_history((), ()), ops=ops,
                             seconds=time.monotonic() - started, overlapped=False, not_judged=(
                                 f"{why}: the store admits one process at a time, so two runners in two processes "
                                 f"cannot share it and nothing raced"))
    if problems:
        raise RuntimeError("concurrent runners: " + "; ".join(problems))
    service = _build(spec, folder / "store")
    try:
        finals = await final_reads(service, names, rounds)
    finally:
        await aclose_service(service)
    return RunnersResult(service=spec, mode="processes", verdict=check_history(ops, finals), ops=ops + tuple(finals),
                         seconds=time.monotonic() - started, overlapped=overlapped(ops))


if __name__ == "__main__":
    _args = json.loads(sys.argv[1])
    asyncio.run(_child(_args["spec"], Path(_args["folder"]), _args["process"], _args["processes"], _args["rounds"]))
