"""One scenario as ``run`` and ``record`` run it, in-process (``-j 1``) or in a worker (``harness/run/pool.py``):
the run, its ``snapshot`` row, and the logging set-up a fresh worker process needs too."""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the CLI imports this module at start-up
    from ..result import ScenarioResult
    from .options import RunOptions
    from ..scenario.models import Scenario

PROG = "rlm-conformance"
Snapshots = tuple[Path, bool] | None
"""(snapshot folder, update) when the run compares snapshots, else None."""


def configure_logging(level: str) -> None:
    """Route log records (ADK's, the target's) to stderr from ``level`` on, unless the host already set logging up."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def with_snapshot(result: ScenarioResult, scenario: Scenario, options: RunOptions, folder: Path,
                  update: bool) -> ScenarioResult:
    """The scenario's ``snapshot`` row: the verdict pytest's syrupy comparison gives, so both agree."""
    from ..snapshot.compare import compare_snapshot, snapshot_path
    from ..targets.choice import choose_target

    if result.trace is None:
        return result
    choice = choose_target(scenario, target=options.target, profile=options.profile, profile_path=options.profile_path,
                           profile_is_default=options.profile_is_default)
    target = None if choice.is_reference else choice.name
    command = f"{PROG} run --scenario {result.scenario} --snapshot-update" + (
        "" if choice.spec == "reference" else f" --target {choice.spec}") + (
        f" --profile {choice.profile_path}" if choice.profile_path else "")
    verdict = compare_snapshot(result.trace, snapshot_path(folder, target, result.scenario), update=update,
                               update_command=command)
    return dataclasses.replace(result, checks=(*result.checks, verdict))


def run_one(scenario: Scenario, options: RunOptions, snapshots: Snapshots) -> ScenarioResult:
    """One scenario and its snapshot row: what ``-j 1`` does in-process and every worker does per scenario.

    It does not raise (but KeyboardInterrupt): a snapshot that cannot be compared or written, or a harness bug
    past ``run_scenario``'s own guard, is the scenario's ``error`` (harness/run/failures.py), and the run goes on."""
    from ..errors import HarnessError
    from .failures import error_result, harness_bug
    from .runner import run_scenario

    started = time.perf_counter()
    try:
        result = run_scenario(scenario, options)
        result = with_snapshot(result, scenario, options, *snapshots) if snapshots else result
        return declared(result, scenario, options)
    except HarnessError as exc:  # the message says what to fix
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - no part of the run owns it but the harness: a bug, reported as one
        error = harness_bug(exc)
    return declared(scrubbed(error_result(scenario, options, error, time.perf_counter() - started), options),
                    scenario, options)


def declared(result: ScenarioResult, scenario: Scenario, options: RunOptions) -> ScenarioResult:
    """``result`` marked with the divergence its backend declares for ``scenario``, if any (a strict xfail)."""
    if options.backend != "databricks":
        return result
    from ..targets.databricks import declared_divergence

    reason = declared_divergence(scenario.name)
    return dataclasses.replace(result, declared=f"databricks backend: {reason}") if reason else result


def scrubbed(result: ScenarioResult, options: RunOptions) -> ScenarioResult:
    """``result`` with no secret of the run in it (its error text may quote one)."""
    from ..llm.scrub_outputs import scrub_result
    from ..llm.session import run_secrets

    return scrub_result(result, secrets=run_secrets(options))
