"""How long a scenario is expected to take, from the scenario alone, to hand the longest out first (``run -j N``).

Workers take the next scenario as they free up; in file order, a long scenario near the end runs on one worker
while the others have nothing left. Longest first, the short ones at the end fill the gaps. The estimate only has
to rank scenarios: each model answer and each turn is a round trip through the target (``STEP_S``, about what one
costs in replay), plus the waits the scenario declares — an executor timeout it sets (scenarios set a short one to
reach it) and the longest delay of its scripted answers. Overestimating a short scenario only hands it out
earlier, which costs nothing; the tail is what the order is for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import Scenario

STEP_S = 0.05


def expected_seconds(scenario: Scenario) -> float:
    steps = sum(len(answers) for answers in scenario.script.values())
    turns = sum(len(session.turns) for session in scenario.sessions)
    delays = [getattr(step, "delay", 0.0) or 0.0 for answers in scenario.script.values() for step in answers]
    return (steps + turns) * STEP_S + (scenario.limits.executor_timeout_s or 0.0) + max(delays, default=0.0)


def longest_first(scenarios: Sequence[Scenario]) -> list[int]:
    """The scenarios' indices, the longest expected first (ties keep file order)."""
    return sorted(range(len(scenarios)), key=lambda index: -expected_seconds(scenarios[index]))
