"""``explore --crash``: each drawn conversation is also killed at a drawn point and recovered (harness/crash/), and
judged by the crash checks instead of one run's checks; a finding is written as a crash case (``crash:`` field),
which ``rlm-conformance crash`` replays.

An example that cannot be judged is discarded with its reason, never a finding: a drawn point past the run's last
event, a run that did not pass its point again, a store that keeps nothing across processes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..crash.checks import CRASH_CHECKS, RECOVERY_STATE_CHECKS

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from ..run.options import RunOptions
    from ..scenario.models import Scenario

CRASH_FINDINGS: tuple[str, ...] = (*CRASH_CHECKS, *(f"recovery:{name}" for name in RECOVERY_STATE_CHECKS))
"""The checks a crash example makes findings of (``--check`` picks among these with ``--crash``)."""
KINDS = ("after", "before")
RUNS_PER_EXAMPLE = 4  # the uncrashed run, the store's probe, the killed run, the recovery: --example-timeout each
MAX_EVENT = 10
"""Drawn points lie within the first MAX_EVENT + 1 events (a small conversation appends about that many)."""


def _unjudged(scenario: Scenario, options: RunOptions, why: str) -> ScenarioResult:
    from ..result import ScenarioResult

    return ScenarioResult(scenario=scenario.name, description=scenario.description, target=options.target or "",
                          llm_mode=options.llm_mode.value, session_service=options.session_service, checks=(),
                          trace=None, duration_s=0.0, error=why)


def run_crash_example(scenario: Scenario, options: RunOptions) -> ScenarioResult:
    """The uncrashed run's result with the checks of the scenario's one crash point in place of its own."""
    from ..crash.matrix import crash_matrix

    assert scenario.crash is not None
    try:
        report = crash_matrix(scenario, options, only=[scenario.crash.point], recovery=scenario.crash.recovery)
    except LookupError as exc:  # point_of: the drawn index lies past what this conversation appended
        return _unjudged(scenario, options, f"the crash point is past the run: {exc}")
    if report.error or report.not_applicable or report.uncrashed is None:
        return _unjudged(scenario, options, f"the crash matrix could not judge: "
                                            f"{report.error or report.not_applicable or 'no uncrashed run'}")
    [point] = report.points
    if point.error or point.not_applicable:
        return _unjudged(scenario, options, f"{point.point.label}: {point.error or point.not_applicable}")
    return replace(report.uncrashed, checks=point.checks)
