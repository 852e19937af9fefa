"""``python -m bench`` (also ``tox -e bench``): every benchmark figure, with its same-run baseline and ratio.

    python -m bench                     # everything (about 5-8 minutes on 2 cores)
    python -m bench --quick             # a smoke run: small sizes, one scenario (well under a minute)
    python -m bench --only store        # one benchmark (repeat or comma-separate for several)
    python -m bench --out DIR           # write latest.json / latest.md / plots / profile.txt to DIR
    python -m bench --strict            # exit 1 when a target is not met

Prints one table and writes ``bench/results/latest.json`` and ``latest.md``
(with the machine the figures came from) plus SVG plots and ``profile.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .common import (
    RESULTS_DIR,
    BenchResult,
    Row,
    machine_info,
    machine_line,
    print_rows,
    rows_table_markdown,
    write_json,
)

BENCHES = {
    "suite": "bench.suite",
    "store": "bench.store",
    "state": "bench.state_budget",
    "executor": "bench.executor",
    "scale": "bench.scale",
    "contention": "bench.contention",
    "explore": "bench.explore",
    "crash": "bench.crash",
}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, one scenario, no profile")
    parser.add_argument("--only", action="append", default=[], metavar="NAME[,NAME]",
                        help=f"run only these benchmarks: {', '.join(BENCHES)} (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, metavar="DIR",
                        help="where results go (default: bench/results)")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any target is not met")
    args = parser.parse_args(argv)
    names = [n.strip() for chunk in args.only for n in chunk.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    args.names = [n for n in BENCHES if n in names] if names else list(BENCHES)
    return args


def _plots(results: dict[str, BenchResult], out: Path) -> list[str]:
    from . import plots

    files = []
    store = results.get("store")
    if store and store.details.get("by_service"):
        series = {label: [(int(size), m["get_median_ms"]) for size, m in by_size.items()]
                  for label, by_size in store.details["by_service"].items()}
        path = out / "store_get_session.svg"
        path.write_text(plots.loglog_chart("get_session (all events), median", "events in the session",
                                           "milliseconds", series), encoding="utf-8")
        files.append(str(path))
        series = {label: [(int(size), m["append_p50_ms"]) for size, m in by_size.items()]
                  for label, by_size in store.details["by_service"].items()}
        path = out / "store_append_p50.svg"
        path.write_text(plots.loglog_chart("append_event p50", "events in the session", "milliseconds", series),
                        encoding="utf-8")
        files.append(str(path))
    suite = results.get("suite")
    if suite and suite.details.get("per_scenario"):
        table = sorted(suite.details["per_scenario"], key=lambda t: -t["harness_s"])
        series = {"harness (replay)": [t["harness_s"] for t in table],
                  "bare ADK Runner": [t["bare_s"] for t in table]}
        if all("harness_memory_s" in t for t in table):
            series["harness on adk-memory"] = [t["harness_memory_s"] for t in table]
        path = out / "suite_per_scenario.svg"
        path.write_text(plots.bar_chart("Per-scenario wall time (median)", "seconds",
                                        [t["scenario"] for t in table], series), encoding="utf-8")
        files.append(str(path))
    scale = results.get("scale")
    if scale and scale.details.get("by_size"):
        by_size = {int(n): m for n, m in scale.details["by_size"].items()}
        path = out / "scale_suite_time.svg"
        path.write_text(plots.loglog_chart(
            "Suite wall time vs scenarios (run -j 2, fresh process)", "scenarios", "seconds",
            {"suite wall time": [(n, m["wall_s"]) for n, m in sorted(by_size.items())],
             "sum of scenario run times": [(n, m["sum_durations_s"]) for n, m in sorted(by_size.items())],
             "linear from the smallest": [(n, by_size[min(by_size)]["wall_s"] * n / min(by_size))
                                          for n in sorted(by_size)]}), encoding="utf-8")
        files.append(str(path))
        jobs = scale.details["jobs"]
        labels = [k for k in jobs if k.startswith("j")]
        path = out / "scale_jobs.svg"
        path.write_text(plots.bar_chart("run -j N on the real suite (fresh process)", "seconds",
                                        [f"-j {k[1:]}" for k in labels],
                                        {"wall time": [jobs[k]["wall_s"] for k in labels],
                                         "sum of scenario run times": [jobs[k]["sum_durations_s"] for k in labels]}),
                        encoding="utf-8")
        files.append(str(path))
    return files


def _markdown(report: dict[str, Any], rows: list[Row], results: dict[str, BenchResult]) -> str:
    machine = report["machine"]
    lines = [f"# Benchmark results ({'quick' if report['quick'] else 'full'} run)", "",
             f"* when: {report['generated_at']}",
             f"* machine: {machine_line(machine)}",
             "* packages: " + ", ".join(f"{k} {v}" for k, v in machine["packages"].items() if v),
             f"* commit: {machine['git_commit']}{' (dirty)' if machine['git_dirty'] else ''}",
             f"* command: `{report['command']}`",
             "* every ratio is value / baseline, both measured in this run; `info` rows have no target", "",
             rows_table_markdown(rows), "",
             "## Time the bench took", ""]
    for name, seconds in report["bench_timings_s"].items():
        lines.append(f"* {name}: {seconds:.1f} s")
    suite = results.get("suite")
    if suite and suite.details.get("per_scenario"):
        lines += ["", "## Suite, per scenario (medians)", "",
                  "| scenario | harness s | bare s | ratio | bare, same store s | ratio, same store | "
                  "harness on adk-memory s | events (harness/bare) | same events |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for t in sorted(suite.details["per_scenario"], key=lambda t: t["scenario"]):
            memory = f"{t['harness_memory_s']:.3f}" if "harness_memory_s" in t else "—"
            same = t["bare_same_store_s"]
            lines.append(f"| {t['scenario']} | {t['harness_s']:.3f} | {t['bare_s']:.3f} | {t['ratio']:.2f}x | "
                         f"{same:.3f} | {t['harness_s'] / same:.2f}x | {memory} | "
                         f"{t['events']}/{t['bare_events']} | {'yes' if t['same_events'] else 'NO'} |")
    if report["files"]:
        lines += ["", "## Files", ""] + [f"* `{Path(f).name}`" for f in report["files"]]
    if report["errors"]:
        lines += ["", "## Errors", ""] + [f"* {name}: {err.splitlines()[-1]}" for name, err in report["errors"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, BenchResult] = {}
    timings: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name in args.names:
        print(f"bench: running {name}{' (quick)' if args.quick else ''} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(BENCHES[name])
            results[name] = module.run(quick=args.quick, results_dir=out)
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others' figures
            errors[name] = traceback.format_exc()
            print(f"bench: {name} failed:\n{errors[name]}", file=sys.stderr)
            results[name] = BenchResult(rows=[Row(name, "benchmark crashed", float("nan"), "", met=False,
                                                  note=errors[name].strip().splitlines()[-1][:120])])
        timings[name] = results[name].elapsed_s = time.perf_counter() - t0
        print(f"bench: {name} took {timings[name]:.1f} s", file=sys.stderr, flush=True)
    timings["total"] = time.perf_counter() - started
    rows = [row for name in args.names for row in results[name].rows]
    files = [f for name in args.names for f in results[name].files]
    try:
        files += _plots(results, out)
    except Exception:  # noqa: BLE001 - a plot is not worth losing the figures for
        errors["plots"] = traceback.format_exc()
    machine = machine_info()
    report = {
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "quick": args.quick,
        "benchmarks": args.names,
        "machine": machine,
        "bench_timings_s": timings,
        "rows": [row.to_json() for row in rows],
        "details": {name: results[name].details for name in args.names},
        "files": [str(Path(f).name) for f in files],
        "errors": errors,
    }
    write_json(out / "latest.json", report)
    (out / "latest.md").write_text(_markdown(report, rows, results), encoding="utf-8")
    print_rows(rows, title=f"rlm-conformance benchmarks — {machine_line(machine)}")
    unmet = [r for r in rows if r.met is False]
    print(f"{len(rows)} figures, {sum(r.met is True for r in rows)} targets met, {len(unmet)} not met; "
          f"bench took {timings['total']:.1f} s ({', '.join(f'{k} {v:.0f} s' for k, v in timings.items() if k != 'total')}); "
          f"results in {out}/latest.md")
    if errors:
        return 2
    return 1 if (args.strict and unmet) else 0


if __name__ == "__main__":
    sys.exit(main())
