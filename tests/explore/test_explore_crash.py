"""``explore --crash``: a drawn conversation killed at its drawn point and recovered, judged by the crash checks —
a finding on a recovery that drops the orphaned result, none on the reference agent; a point past the run is a
discarded example, never a finding. Each example is four real processes (harness/crash/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.explore.crash_example import CRASH_FINDINGS, run_crash_example
from harness.explore.findings import judge
from harness.explore.library import load_library
from harness.explore.plan import Plan, SessionPlan, StepPlan, to_scenario
from harness.explore.target_model import describe_target
from harness.llm.modes import LlmMode
from harness.run.options import RunOptions
from harness.targets.profile import load_profile

pytestmark = pytest.mark.slow

PROFILE = load_profile(Path(__file__).resolve().parents[2] / "reference_agent" / "conformance_profile.yaml")
DELEGATION = (StepPlan(kind="delegate", behaviour="small_output", args='{"instruction": "sum the amounts"}'),)


def verdict(target: str, crash: tuple[str, int]):
    model = describe_target(target, PROFILE)
    scenario = to_scenario(Plan(1, (SessionPlan("user_1", 1),), DELEGATION, crash=crash), model, load_library(),
                           name="explore_example", description="d")
    options = RunOptions(target=target, llm_mode=LlmMode.SCRIPTED, profile=PROFILE, probe_session_service=False)
    return judge(run_crash_example(scenario, options), frozenset(CRASH_FINDINGS))


def test_a_recovery_that_drops_the_orphaned_result_is_a_finding_and_the_reference_agent_none() -> None:
    broken = verdict("tests.crash_broken_targets:drops_orphans", ("after", 3))
    assert broken.discarded is None and "result_not_lost" in broken.failing, broken
    correct = verdict("reference", ("after", 3))
    assert correct.discarded is None and correct.failing == {}, correct


def test_a_point_past_the_run_is_discarded() -> None:
    past = verdict("reference", ("after", 60))
    assert past.failing == {} and "past the run" in (past.discarded or ""), past
