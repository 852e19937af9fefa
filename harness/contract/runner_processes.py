"""Concurrent runners as OS processes on one durable session service (a file store, a server).

``run_processes(spec, folder)`` starts one child per runner (``sys.executable -m
harness.contract.runner_processes``), each building its own service from ``spec`` — a built-in contract
profile name or ``module:attr``, the same words as ``--session-service`` — on the shared ``folder/store``,
then running ``runners.run_runner``; they run in ``folder/store``, so a factory naming a relative file shares
it too. The children meet at a file barrier before each phase (each touches ``<phase>.<runner>.ready`` and
waits for the others', or their ``gone`` mark), so their calls interleave; each writes its history as JSONL,
flushed per call. Once every runner is done, the first reads every session once (``final.jsonl``) and the
parent checks the histories (``history_check``) — the parent never builds the service.

Not judged, saying why: a service whose second opener is refused (DuckDB admits one process per file:
``DatabaseLockedError``; the refused ``open`` is recorded and the runner stops), and one whose sessions one
runner creates and the other never finds (it keeps them in its process: in memory).
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
from .history import HistoryWriter, Op, error_text, now, read_history
from .history_check import check_history
from .runners import (
    NOT_FOUND,
    PROCESSES,
    ROUNDS,
    RunnersResult,
    final_reads,
    overlapped,
    process_names,
    run_runner,
)

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
        if process == processes[0]:
            await barrier("final")
            finals = HistoryWriter("final", folder / "final.jsonl")
            await final_reads(service, processes, rounds, finals)
            finals.close()
        else:
            await barrier("final")
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
        {"spec": spec, "folder": str(folder.resolve()), "process": p, "processes": names, "rounds": rounds})],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=folder / "store")
        for p in names]
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
    unseen = _sessions_never_found(ops, names)
    if unseen:
        return RunnersResult(service=spec, mode="processes", verdict=check_history((), ()), ops=ops,
                             seconds=time.monotonic() - started, overlapped=False, not_judged=(
                                 f"runner {unseen} never found a session runner {names[0]} created: the service "
                                 f"keeps its sessions in its own process (in memory), so no second process can "
                                 f"share it"))
    finals = tuple(read_history(folder / "final.jsonl"))
    return RunnersResult(service=spec, mode="processes", verdict=check_history(ops, finals), ops=ops + finals,
                         seconds=time.monotonic() - started, overlapped=overlapped(ops))


def _sessions_never_found(ops: tuple[Op, ...], names: list[str]) -> str:
    """A runner (not the creator) every one of whose reads came back None: it cannot see the store."""
    for name in names[1:]:
        reads = [op for op in ops if op.process == name and op.kind == "read"]
        if reads and all(op.error == NOT_FOUND for op in reads):
            return name
    return ""


if __name__ == "__main__":
    _args = json.loads(sys.argv[1])
    asyncio.run(_child(_args["spec"], Path(_args["folder"]), _args["process"], _args["processes"], _args["rounds"]))
