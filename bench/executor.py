"""Executor (Job_B): batched sub-LM calls run concurrently; start-up time per run.

* **llm_query_batched** — Job_B runs (``LocalJobRunner``, a real subprocess, the
  LM bridge) code that sends N prompts with ``llm_query_batched`` to the scripted
  Gemini endpoint, where every call takes L seconds (``slow`` fault steps), then
  the same N prompts one by one with ``llm_query``: the sequential time (~N*L) is
  the baseline, measured in the same run by the same code. Target: the batch
  finishes in about L — at most 1.5*L — not N*L.
* **start-up** — wall time of one ``LocalJobRunner.run`` of a block that does
  nothing (process start, executor imports, LM bridge, result JSON), against the
  floor of starting a bare ``python -c pass`` and the executor process on its own.
* **warm block** — the same ``pass`` block as the next block of a session whose
  warm process is already running (LM bridge, request, result JSON, namespace
  snapshot; no process start), against the one-shot run above.
* **new session** — the ``pass`` block as the first block of a new session: its
  warm process forked from the fork server (``reference_agent/backends/forkserver.py``)
  against the same with the process started afresh (``python -s -m
  reference_agent.executor.worker``, the fork server off), interleaved; CPU time of
  this process, its children and the workers the fork server reaped (/proc), the
  server's own start not counted (once per host process).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import BenchResult, Row, median, percentile, quiet

BATCH_CASES = ((8, 0.25), (32, 0.25))
QUICK_BATCH_CASES = ((4, 0.1),)
STARTUP_RUNS = 10
QUICK_STARTUP_RUNS = 3
BATCH_LIMIT = 1.5  # x L
WARM_LIMIT = 0.25  # a warm block costs at most this share of a one-shot run: it skips the interpreter's start
FORKED_LIMIT = 0.5  # a new session's forked worker costs at most this share of one started afresh (CPU)


def _batch_code(n: int) -> str:
    return (
        "import json, time\n"
        f"prompts = ['Label item %d as positive or negative.' % i for i in range({n})]\n"
        "t = time.perf_counter(); answers = llm_query_batched(prompts); batched = time.perf_counter() - t\n"
        "t = time.perf_counter()\n"
        "for p in prompts:\n"
        "    llm_query(p)\n"
        "sequential = time.perf_counter() - t\n"
        "print(json.dumps({'batched_s': batched, 'sequential_s': sequential, 'answers': len(answers)}))\n"
    )


async def _run_code(volume: Any, runner: Any, code: str, name: str, sub_lm: Any, max_calls: int = 64,
                    session: str | None = None) -> tuple[dict, float]:
    """One block; with ``session``, as a block of that session (its warm process, its namespace snapshot)."""
    from reference_agent.backends.jobs import JobRequest

    path = volume.path("artifacts", f"{name}.py")
    volume.write_text(path, code)
    namespace = volume.path("artifacts", f"namespace_{session}.pkl") if session else None
    request = JobRequest(artifact_path=path, run_id=name, iteration=1, timeout_s=120.0, max_sublm_calls=max_calls,
                         namespace_path=namespace)
    started = time.perf_counter()
    outcome = await runner.run(request, sub_lm=sub_lm)
    wall = time.perf_counter() - started
    return json.loads(volume.read_text(outcome.result_json_path)), wall


async def _batched(n: int, latency: float, home: Path) -> dict[str, Any]:
    from harness.llm.modes import LlmMode, endpoint_for
    from harness.llm.scripted_endpoint import ScriptedEndpoint
    from harness.scenario.script import SUB_LM, FaultStep, TextStep
    from reference_agent.backends.jobs import LocalJobRunner
    from reference_agent.backends.sublm import sublm_from_genai
    from reference_agent.backends.volume import LocalVolumeStore

    script = {SUB_LM: [TextStep(text="warm"), *[FaultStep(fault="slow", delay=latency)] * (2 * n)]}
    with ScriptedEndpoint(script) as endpoint:
        model_endpoint = endpoint_for(LlmMode.SCRIPTED, model="gemini-2.5-flash", scripted_base_url=endpoint.base_url)
        sub_lm = sublm_from_genai(model_endpoint.genai_client(), "gemini-2.5-flash")
        # The first google-genai call of a process builds pydantic schemas (~0.2 s): pay it before timing.
        started = time.perf_counter()
        await sub_lm("warm-up")
        warm_up = time.perf_counter() - started
        volume = LocalVolumeStore(home / "volume")
        result, wall = await _run_code(volume, LocalJobRunner(volume), _batch_code(n), f"batch{n}", sub_lm,
                                       max_calls=2 * n)
        served = len(endpoint.calls) - 1
    if result.get("status") != "success":
        raise RuntimeError(f"batched run failed: {result.get('error')} {result.get('stderr', '')[-500:]}")
    measured = json.loads(result["stdout"].strip().splitlines()[-1])
    return {**measured, "n": n, "latency_s": latency, "job_wall_s": wall, "served_calls": served,
            "host_first_call_s": warm_up}


async def _spawn(argv: list[str], cwd: str) -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
                                                env={"PATH": os.environ.get("PATH", os.defpath),
                                                     "PYTHONPATH": _package_parent()})
    await proc.wait()
    return time.perf_counter() - started


def _package_parent() -> str:
    import reference_agent

    return str(Path(reference_agent.__file__).resolve().parents[1])


async def _startup(runs: int, home: Path) -> dict[str, list[float]]:
    from reference_agent.backends.jobs import LocalJobRunner
    from reference_agent.backends.volume import LocalVolumeStore

    async def no_sub_lm(prompt: str) -> str:
        raise RuntimeError("not used")

    volume = LocalVolumeStore(home / "volume")
    runner = LocalJobRunner(volume)
    path = volume.path("artifacts", "noop.py")
    volume.write_text(path, "pass\n")
    local = str(volume.local_path(path))
    times: dict[str, list[float]] = {"runner": [], "warm_block": [], "executor_process": [], "bare_python": []}
    await _run_code(volume, runner, "pass\n", "warmup", no_sub_lm)  # page cache, pyc
    await _run_code(volume, runner, "pass\n", "warm0", no_sub_lm, session="s")  # starts the session's process
    for i in range(runs):  # interleaved: a noisy second hits all four alike
        _, wall = await _run_code(volume, runner, "pass\n", f"noop{i}", no_sub_lm)
        times["runner"].append(wall)
        result, wall = await _run_code(volume, runner, "pass\n", f"warm{i + 1}", no_sub_lm, session="s")
        if result.get("executor_process", {}).get("mode") != "warm":
            raise RuntimeError(f"the warm block ran {result.get('executor_process')}: no warm process to measure")
        times["warm_block"].append(wall)
        times["executor_process"].append(await _spawn(
            [sys.executable, "-s", "-m", "reference_agent.executor", "--artifact-path", local, "--run-id", f"p{i}",
             "--iteration", "1"], str(home)))
        times["bare_python"].append(await _spawn([sys.executable, "-s", "-c", "pass"], str(home)))
    runner.close()
    return times


def _cpu_s() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def _new_sessions(runs: int, home: Path) -> dict[str, float]:
    """Mean CPU seconds of a new session's first block (this process, its children, and the workers the fork
    server reaped), its worker forked vs started afresh; interleaved."""
    from reference_agent.backends import forkserver
    from reference_agent.backends.jobs import LocalJobRunner
    from reference_agent.backends.volume import LocalVolumeStore

    async def no_sub_lm(prompt: str) -> str:
        raise RuntimeError("not used")

    async def new_session(name: str) -> None:
        runner = LocalJobRunner(volume)
        result, _ = await _run_code(volume, runner, "pass\n", name, no_sub_lm, session=name)
        runner.close()  # the worker is stopped and reaped (by the fork server when forked)
        if result.get("executor_process", {}).get("mode") != "warm":
            raise RuntimeError(f"the new session ran {result.get('executor_process')}, not warm")

    volume = LocalVolumeStore(home / "volume")
    totals = {"forked": 0.0, "afresh": 0.0}
    supported = forkserver.SUPPORTED
    try:
        await new_session("warmup")  # the fork server's own start and the page cache: not counted
        for i in range(runs):
            for mode in totals:
                forkserver.SUPPORTED = supported and mode == "forked"
                before = _cpu_s() + forkserver.reaped_cpu_s()
                await new_session(f"{mode}{i}")
                totals[mode] += _cpu_s() + forkserver.reaped_cpu_s() - before
    finally:
        forkserver.SUPPORTED = supported
    return {mode: total / runs for mode, total in totals.items()}


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    result = BenchResult()
    cases = QUICK_BATCH_CASES if quick else BATCH_CASES
    rows = result.rows
    batches = []
    with quiet():
        for n, latency in cases:
            with tempfile.TemporaryDirectory(prefix="rlm-bench-exec-") as tmp:
                batches.append(asyncio.run(_batched(n, latency, Path(tmp))))
        with tempfile.TemporaryDirectory(prefix="rlm-bench-exec-") as tmp:
            startup = asyncio.run(_startup(QUICK_STARTUP_RUNS if quick else STARTUP_RUNS, Path(tmp)))
        with tempfile.TemporaryDirectory(prefix="rlm-bench-exec-") as tmp:
            sessions = asyncio.run(_new_sessions(QUICK_STARTUP_RUNS if quick else STARTUP_RUNS, Path(tmp)))
    result.details["batched"] = batches
    result.details["startup_s"] = startup
    result.details["new_session_cpu_s"] = sessions
    for b in batches:
        n, latency = b["n"], b["latency_s"]
        ok = b["answers"] == n and b["served_calls"] == 2 * n
        rows.append(Row("executor", f"llm_query_batched, N={n}, L={1000 * latency:.0f} ms", b["batched_s"], "s",
                        b["sequential_s"], f"{n} x llm_query", target=f"<= {BATCH_LIMIT:g} x L = "
                        f"{BATCH_LIMIT * latency:.3f} s", met=ok and b["batched_s"] <= BATCH_LIMIT * latency,
                        note=f"N*L = {n * latency:.2f} s" + ("" if ok else "; answers/calls do not add up")))
    floor = median(startup["bare_python"])
    rows.append(Row("executor", "Job_B start-up per run (LocalJobRunner.run of `pass`), median",
                    1000 * median(startup["runner"]), "ms", 1000 * floor, "bare python -c pass",
                    note=f"p90 {1000 * percentile(startup['runner'], 90):.0f} ms"))
    rows.append(Row("executor", "  executor process alone (python -s -m reference_agent.executor), median",
                    1000 * median(startup["executor_process"]), "ms", 1000 * floor, "bare python -c pass"))
    one_shot = median(startup["runner"])
    rows.append(Row("executor", "Job_B block in the session's warm process (LocalJobRunner.run of `pass`), median",
                    1000 * median(startup["warm_block"]), "ms", 1000 * one_shot, "one-shot run of the same block",
                    target=f"<= {WARM_LIMIT:g} x one-shot", met=median(startup["warm_block"]) <= WARM_LIMIT * one_shot,
                    note=f"p90 {1000 * percentile(startup['warm_block'], 90):.0f} ms"))
    forked, afresh = sessions["forked"], sessions["afresh"]
    rows.append(Row("executor", "New session's first block, its warm process forked (CPU, with its processes), "
                    "mean", 1000 * forked, "ms", 1000 * afresh, "the same, the process started afresh",
                    target=f"<= {FORKED_LIMIT:g} x afresh", met=forked <= FORKED_LIMIT * afresh))
    return result
