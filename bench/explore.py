"""``rlm-conformance explore``: examples per second and time to first finding, against the same scenarios run plainly.

Per target (the reference agent, ``legacy``, ``examples/seed004_rlm_broken``), one exploration (seed 0, no
database, every check, ``-j 1``) records every scenario the search ran, in order; then the same scenarios go through
``run_scenario`` one by one, as ``rlm-conformance run --llm-mode scripted`` would run them. In a full run each pass
runs in a fresh process of its own, after one untimed conversation: a target may keep state between runs in one
process (seed004's REPL workers are kept per session id, and a later pass with the same ids would find them warm,
its ``llm_query`` imports paid by the pass before); ``--quick`` keeps them in one process.

* **examples/s** — runs the search asked for (generation and shrinking) per second of search, against the rate
  of the same scenarios run plainly: the ratio is what the engine (Hypothesis, judging, shrinking) costs on top of
  running them. Target: >= 0.9x. One conversation runs untimed first (the first run's imports are nobody's).
* **time to first finding** — seconds from the search's start to its first failing example, against the time
  the plain loop took to run the examples up to that one.
* **-j 2** — the same exploration in two worker processes: examples/s against ``-j 1``'s, and the findings must
  be the same (same checks, same minimal conversations). Two cores shared with other work give far less than 2x.
* **default budget** (full run only) — ``explore`` on the reference agent with its defaults (100 examples, 40
  shrink runs, ``-j`` = cores): wall time, target <= 120 s on 2 cores (issue 32).
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from .common import ROOT, BenchResult, Row, quiet

TARGETS = (("reference", None), ("legacy", None),
           ("examples.seed004_rlm_broken.agent:app", "examples/seed004_rlm/rlm-profile.yaml"))
QUICK_TARGETS = TARGETS[1:2]  # legacy: a finding on the first example
EXAMPLES, QUICK_EXAMPLES = 30, 6
SHRINK_RUNS = 20
ENGINE_LIMIT = 0.9  # explore's rate >= 0.9x the plain rate of the same scenarios
DEFAULT_BUDGET_S = 120.0


@dataclass
class _Explored:
    report: Any
    wall_s: float
    scenarios: list[Any]


def _explore(spec: str, profile_path: str | None, *, examples: int, jobs: int) -> _Explored:
    from harness.checks import registered_checks
    from harness.explore.engine import Budget, Explorer
    from harness.explore.library import load_library
    from harness.explore.target_model import describe_target
    from harness.llm.modes import LlmMode
    from harness.run.options import RunOptions
    from harness.run.runner import run_scenario
    from harness.targets.profile import load_profile

    profile = load_profile(ROOT / profile_path) if profile_path else None
    model = describe_target(spec, profile)
    options = RunOptions(target=spec, llm_mode=LlmMode.SCRIPTED, profile=model.profile if profile else None,
                         profile_path=ROOT / profile_path if profile_path else None, probe_session_service=False)
    scenarios: list[Any] = []

    def recorded(scenario: Any, run_options: Any) -> Any:  # -j 1 only: in this process
        scenarios.append(scenario)
        return run_scenario(scenario, run_options)

    library = load_library()
    explorer = Explorer(model, library, options, checks=frozenset(registered_checks()), seed=0,
                        budget=Budget(max_examples=examples, shrink_runs=SHRINK_RUNS), database=None, jobs=jobs,
                        run=recorded if jobs == 1 else None)
    _warm_up(spec)
    scenarios.clear()
    started = time.perf_counter()
    report = explorer.explore()
    return _Explored(report, time.perf_counter() - started, scenarios)


def _warm_up(spec: str) -> None:
    """One conversation untimed: the first run's imports are nobody's."""
    from harness.explore.library import load_library
    from harness.explore.plan import Plan, SessionPlan, to_scenario
    from harness.explore.target_model import describe_target
    from harness.run.runner import run_scenario

    options = _options_for(spec)
    warm = to_scenario(Plan(1, (SessionPlan("user_1", 1),), ()), describe_target(spec, options.profile),
                       load_library(), name="warm", description="warm-up")
    run_scenario(warm, options)


def _isolated(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` in a fresh process (spawned: nothing of this one carried over), quietly."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_quietly, function, *args, **kwargs).result()


def _quietly(function: Any, *args: Any, **kwargs: Any) -> Any:
    with quiet():
        return function(*args, **kwargs)


def _plain(scenarios: list[Any], spec: str) -> list[float]:
    """Each scenario through ``run_scenario`` as ``run`` runs it: the seconds each took."""
    from harness.run.runner import run_scenario

    _warm_up(spec)
    options = _options_for(spec)
    durations = []
    for scenario in scenarios:
        started = time.perf_counter()
        run_scenario(scenario, options)
        durations.append(time.perf_counter() - started)
    return durations


def _options_for(spec: str) -> Any:
    from harness.llm.modes import LlmMode
    from harness.run.options import RunOptions
    from harness.targets.profile import load_profile

    profile_path = dict(TARGETS).get(spec)
    profile = load_profile(ROOT / profile_path) if profile_path else None
    return RunOptions(target=spec, llm_mode=LlmMode.SCRIPTED, profile=profile,
                      profile_path=ROOT / profile_path if profile_path else None, probe_session_service=False)


def _findings(report: Any) -> list[tuple[str, str]]:
    return [(f.check, f.plan.key()) for f in report.findings]


def _default_budget() -> float:
    from harness.cli import main

    started = time.perf_counter()
    with quiet():
        main(["explore", "--target", "reference", "--no-database", "--no-progress", "--out",
              str(Path("/tmp") / "rlm-bench-explore-found")])
    return time.perf_counter() - started


def run(quick: bool = False, results_dir: Path | None = None) -> BenchResult:
    examples = QUICK_EXAMPLES if quick else EXAMPLES
    apart = _quietly if quick else _isolated  # a smoke run's ratios mean nothing: spare it three process starts
    result = BenchResult()
    for spec, profile_path in QUICK_TARGETS if quick else TARGETS:
        one = apart(_explore, spec, profile_path, examples=examples, jobs=1)
        plain = apart(_plain, one.scenarios, spec)
        two = apart(_explore, spec, profile_path, examples=examples, jobs=2)
        label = spec.split(":")[0].split(".")[-2] if ":" in spec else spec  # examples.seed004_rlm_broken.agent
        rate = one.report.tried / one.report.elapsed_s
        plain_rate = len(plain) / sum(plain)
        result.details[label] = {"tried": one.report.tried, "shrink_runs": one.report.shrink_runs,
                                 "findings": [f.check for f in one.report.findings], "wall_s": one.wall_s,
                                 "plain_s": sum(plain), "jobs_2_elapsed_s": two.report.elapsed_s,
                                 "jobs_2_unused_runs": two.report.unused_runs}
        result.rows.append(Row("explore", f"explore {label}: examples/s (-j 1, {examples} examples, "
                                          f"{one.report.tried} runs)", rate, "1/s", plain_rate,
                               "the same scenarios through run_scenario", target=f">= {ENGINE_LIMIT}x",
                               met=rate / plain_rate >= ENGINE_LIMIT))
        if one.report.findings:
            first = min(one.report.findings, key=lambda f: f.after_s)
            result.rows.append(Row("explore", f"explore {label}: time to first finding ({first.check}, example "
                                              f"#{first.after_examples})", first.after_s, "s",
                                   sum(plain[:first.after_examples]), "the plain runs up to that example"))
        same = _findings(two.report) == _findings(one.report)
        result.rows.append(Row("explore", f"explore {label}: examples/s with -j 2", two.report.tried /
                               two.report.elapsed_s, "1/s", rate, "-j 1, same run", target="same findings",
                               met=same, note="" if same else "the findings differ from -j 1's"))
    if not quick:
        wall = _default_budget()
        result.rows.append(Row("explore", "explore reference, default budget (100 examples, -j = cores), wall",
                               wall, "s", None, "", target=f"<= {DEFAULT_BUDGET_S:.0f} s", met=wall <= DEFAULT_BUDGET_S))
    return result
