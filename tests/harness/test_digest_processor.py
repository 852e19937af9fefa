"""A results processor written in code (tests/user_agents/digest_rlm: a BaseAgent digest, no model) judged from the
profile init drafts for it: green on the correct agent (processor_model_runs n/a, saying so), and each planted
defect found by the check that owns it — the stale re-digest by stage_gating, which saw no digest run at all while
only events with text counted as a processor's run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import load_profile

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "digest_rlm"
SCRIPT = {"coder": [{"call": "run_code", "args": {"code": "print(6 * 7)"}}, {"text": "Running it."},
                    {"text": "Thinking it over."}, {"call": "exit_loop"}]}


def _run(tmp_path: Path, target: str | None = None):
    scenario = load_scenario(AGENT_DIR / "scenarios" / "digest_once.yaml")
    if target is not None:  # one turn in which the coder once answers without delegating
        scenario = scenario.model_validate({**scenario.model_dump(mode="json", exclude_defaults=True),
                                            "script": SCRIPT, "sessions": [{"user": "u1", "turns": [{"user": "6*7?"}]}]})
    profile = load_profile(AGENT_DIR / "rlm-profile.yaml")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path, profile=profile,
                                               target=target or profile.target))
    assert result.error is None, result.error
    return result


@pytest.mark.slow
def test_the_correct_digest_agent_is_green(tmp_path: Path) -> None:
    result = _run(tmp_path)
    failed = [(c.name, c.evidence) for c in result.checks if c.status.value == "fail"]
    assert not failed
    verdicts = {c.name: c for c in result.checks}
    assert verdicts["processor_model_runs"].status.value == "n/a"
    assert "2 digest run(s)" in verdicts["stage_gating"].explanation
    assert verdicts["artifacts_consumed"].status.value == "pass"


@pytest.mark.slow
@pytest.mark.parametrize(("app", "check"), [("stale_app", "stage_gating"), ("unmarking_app", "artifacts_consumed")])
def test_each_planted_defect_fails_its_own_check(tmp_path: Path, app: str, check: str) -> None:
    result = _run(tmp_path, target=f"tests.user_agents.digest_rlm.broken:{app}")
    failed = {c.name for c in result.checks if c.status.value == "fail"}
    assert failed == {check}, [(c.name, c.evidence) for c in result.checks if c.status.value == "fail"]
