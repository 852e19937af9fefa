"""Differential runs: every scenario (and every service probe) on two or more session services, compared.

``run_differential(scenarios, ["delta", "adk-memory", "adk-sqlite"])`` runs each
scenario through ``harness.run.runner`` once per service (replay mode by default),
normalises each trace, runs the service probes, and compares every service
with the first. Command line::

    python -m harness.contract.differential --services delta,adk-memory,adk-sqlite

prints the Markdown report and exits 1 if any difference is undeclared or a run failed.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import HarnessError
from ..run.runner import RunOptions, run_scenario_async
from ..scenario.models import Scenario
from ..targets.session_services import aclose_service, resolve_session_service
from .compare import Difference, compare_runs
from .normalize import NormalizedRun, normalize_trace
from .probes import PROBES, run_probe
from .profiles import ContractError, ServiceProfile, get_profile
from .render import render_differential_markdown

__all__ = ["Difference", "DifferentialReport", "assert_only_declared", "render_differential_markdown",
           "run_differential", "run_differential_async"]


@dataclass
class DifferentialReport:
    services: list[str]
    scenarios: list[str]  # agent scenarios, then "probe:<name>"
    differences: list[Difference] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # runs that failed (on any service)
    declarations: dict[str, dict[str, str]] = field(default_factory=dict)  # service -> its declared divergences

    @property
    def undeclared(self) -> list[Difference]:
        return [d for d in self.differences if not d.is_declared]

    @property
    def declared(self) -> list[Difference]:
        return [d for d in self.differences if d.is_declared]

    @property
    def ok(self) -> bool:
        return not self.undeclared and not self.errors


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


async def _preflight(services: Sequence[str], root: Path) -> dict[str, ServiceProfile]:
    """Resolve every service for both paths (scenario runs and probes) and build each once: fail fast and clearly."""
    if len(services) < 2:
        raise ContractError(f"--services {','.join(services)!r}: a differential run needs two or more services.")
    profiles = {}
    for name in services:
        resolve_session_service(name)
        profiles[name] = get_profile(name)
        folder = root / "preflight" / _slug(name)
        folder.mkdir(parents=True, exist_ok=True)
        await aclose_service(profiles[name].build(folder))
    return profiles


async def _scenario_run(scenario: Scenario, service: str, options: RunOptions, home: Path) -> NormalizedRun:
    result = await run_scenario_async(scenario, replace(options, session_service=service, work_dir=home,
                                                        probe_session_service=False))
    if result.trace is None:
        return NormalizedRun(scenario=scenario.name, service=service, error=result.error or "no trace")
    run = normalize_trace(result.trace, service=service, home=home)
    run.error = result.error
    return run


async def run_differential_async(scenarios: Sequence[Scenario], services: Sequence[str],
                                 options: RunOptions | None = None, *, probes: bool = True,
                                 work_dir: Path | None = None) -> DifferentialReport:
    options = options or RunOptions()
    with tempfile.TemporaryDirectory(prefix="rlm-differential-") as tmp:
        root = Path(work_dir or tmp)
        profiles = await _preflight(services, root)
        names = [s.name for s in scenarios] + ([f"probe:{p}" for p in PROBES] if probes else [])
        report = DifferentialReport(services=list(services), scenarios=names,
                                    declarations={n: {k: p.declared(k) or "" for k in _declared_keys(p)}
                                                  for n, p in profiles.items()})
        runs: dict[tuple[str, str], NormalizedRun] = {}
        for scenario in scenarios:
            for service in services:
                home = root / _slug(service) / scenario.name
                runs[scenario.name, service] = await _scenario_run(scenario, service, options, home)
        for probe in PROBES if probes else ():
            for service in services:
                folder = root / _slug(service) / f"probe-{probe}"
                folder.mkdir(parents=True, exist_ok=True)
                runs[f"probe:{probe}", service] = await run_probe(probe, profiles[service], folder, service_name=service)
    base = services[0]
    for name in names:
        for service in services:
            if runs[name, service].error:
                report.errors.append(f"{name} on {service}: {runs[name, service].error}")
        for other in services[1:]:
            report.differences.extend(compare_runs(runs[name, base], runs[name, other], profiles[base], profiles[other]))
    return report


def _declared_keys(profile: ServiceProfile) -> list[str]:
    keys = list(profile.divergences)
    if profile.none_semantics == "store" and "none_deletes" not in keys:
        keys.append("none_deletes")
    return keys


def run_differential(scenarios: Sequence[Scenario], services: Sequence[str], options: RunOptions | None = None,
                     *, probes: bool = True, work_dir: Path | None = None) -> DifferentialReport:
    """Every scenario (and probe) on every service, compared with the first service."""
    return asyncio.run(run_differential_async(scenarios, services, options, probes=probes, work_dir=work_dir))


def assert_only_declared(report: DifferentialReport) -> None:
    """For tests: fail with the whole Markdown report when anything is undeclared or a run failed."""
    if not report.ok:
        raise AssertionError("differential run found undeclared differences or failed runs:\n\n"
                             + render_differential_markdown(report))


def _load(scenarios_dir: Path, names: list[str]) -> list[Scenario]:
    from ..scenario.loader import load_scenarios

    scenarios = load_scenarios(scenarios_dir)
    if not names:
        return scenarios
    by_name = {s.name: s for s in scenarios}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ContractError(f"--scenario {', '.join(unknown)}: not in {scenarios_dir}. Known: {', '.join(by_name)}.")
    return [by_name[n] for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.contract.differential", description=__doc__.split("\n")[0])
    parser.add_argument("--services", required=True, help="comma-separated: delta, adk-memory, adk-sqlite, module:factory "
                                                          "(the first is the baseline)")
    parser.add_argument("--scenario", action="append", default=[], help="scenario name (repeatable; default: all)")
    parser.add_argument("--scenarios-dir", type=Path, default=Path("scenarios"))
    parser.add_argument("--cassette-dir", type=Path, default=Path("cassettes"))
    parser.add_argument("--no-probes", action="store_true", help="skip the service probes")
    parser.add_argument("--output", type=Path, help="also write the Markdown report here")
    args = parser.parse_args(argv)
    try:
        scenarios = _load(args.scenarios_dir, args.scenario)
        report = run_differential(scenarios, [s.strip() for s in args.services.split(",") if s.strip()],
                                  RunOptions(cassette_dir=args.cassette_dir), probes=not args.no_probes)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    markdown = render_differential_markdown(report)
    print(markdown)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(markdown, encoding="utf-8")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
