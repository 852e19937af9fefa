"""``rlm-conformance crash``: the crash matrix's wall time against one normal run of the scenario x its crash points.

The matrix of ``single_delegation`` on the reference agent (DuckDB file, scripted model, after-points) runs in a
fresh ``rlm-conformance crash`` process at ``-j 1`` and at ``-j 2``. Each point is two runs in fresh processes (the
crashed one and the recovery) and the matrix one more (the uncrashed run that names the points), so the baseline is
what the same number of plain runs would cost: one ``rlm-conformance run --llm-mode scripted single_delegation``
in a fresh process, x the number of points. The normal runs are interleaved with the matrices (normal, -j 1,
normal, -j 2, normal) and each matrix is set against the mean of the normal runs on either side of it, so a noisy
minute hits both. Target: the matrix at ``-j 2`` <= 1.0x of (normal run x points); reported, not gated.
``--quick`` runs the first ``QUICK_POINTS`` points only (``crash --max-points``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import ROOT, BenchResult, Row, python_cmd

SCENARIO = "single_delegation"
QUICK_POINTS = 2
JOBS = (1, 2)
LIMIT = 1.0  # the matrix at -j 2 <= 1.0x of (normal run x points)


def _cli(home: Path, label: str, *args: str) -> tuple[float, int, Path]:
    """``rlm-conformance ARGS`` in a fresh process from ``home``: wall seconds, exit code, its reports folder."""
    reports = home / f"reports-{label}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    done = subprocess.run([*python_cmd(), "-m", "harness", *args, "--scenarios-dir", str(ROOT / "scenarios"),
                           "--no-progress", "--reports-dir", str(reports)],
                          cwd=home, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"rlm-conformance {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return wall, done.returncode, reports


def _normal(home: Path, label: str) -> dict[str, Any]:
    wall, code, reports = _cli(home, label, "run", "--llm-mode", "scripted", "-j", "1", "--scenario", SCENARIO)
    shutil.rmtree(reports, ignore_errors=True)
    return {"wall_s": wall, "exit": code}


def _matrix(home: Path, label: str, jobs: int, max_points: int | None) -> dict[str, Any]:
    limit = ("--max-points", str(max_points)) if max_points else ()
    wall, code, reports = _cli(home, label, "crash", SCENARIO, "-j", str(jobs), *limit)
    [scenario] = json.loads((reports / "crash.json").read_text())["scenarios"]
    shutil.rmtree(reports, ignore_errors=True)
    if scenario["error"] or scenario["not_applicable"] or not scenario["points"]:
        raise RuntimeError(f"the crash matrix of {SCENARIO} ran no point: "
                           f"{scenario['error'] or scenario['not_applicable'] or 'no points'}")
    failing = [p["point"] for p in scenario["points"] if p["failed"] or p["error"]]
    return {"wall_s": wall, "exit": code, "points": len(scenario["points"]), "failing": failing,
            "uncrashed_run_s": scenario["first_run_s"],
            "point_s": [p["seconds"] for p in scenario["points"]]}


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    result = BenchResult()
    home = Path(tempfile.mkdtemp(prefix="rlm-bench-crash-"))
    try:
        normals = [_normal(home, "normal-0")]
        matrices = {}
        for i, jobs in enumerate(JOBS, start=1):  # normal, -j 1, normal, -j 2, normal
            matrices[jobs] = _matrix(home, f"crash-j{jobs}", jobs, QUICK_POINTS if quick else None)
            normals.append(_normal(home, f"normal-{i}"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result.details = {"scenario": SCENARIO, "normal_runs_s": [n["wall_s"] for n in normals],
                      "matrices": {f"j{jobs}": m for jobs, m in matrices.items()}}
    for i, (jobs, m) in enumerate(matrices.items()):
        normal = (normals[i]["wall_s"] + normals[i + 1]["wall_s"]) / 2  # the runs either side of this matrix
        note = f"points failing: {', '.join(m['failing'])}" if m["failing"] else \
            f"every point passed; the matrix's uncrashed run {m['uncrashed_run_s']:.1f} s"
        target = f"<= {LIMIT}x" if jobs == 2 else ""
        ratio = m["wall_s"] / (normal * m["points"])
        result.rows.append(Row("crash", f"crash matrix {SCENARIO}, {m['points']} after-points, -j {jobs}, wall",
                               m["wall_s"], "s", normal * m["points"],
                               "one normal run (fresh process, scripted) x points", target=target,
                               met=(ratio <= LIMIT and not m["failing"]) if jobs == 2 else None, note=note))
    return result
