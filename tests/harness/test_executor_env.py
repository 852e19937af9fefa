"""Job_B's environment is checked in every run: canaries planted in the host, a probe on each kind of process.

* ``harness/run/canaries.py`` plants canary credentials while a replay or scripted run drives the target, and puts
  the environment back as it was afterwards (a variable that was set included).
* The profile's default allow-list is exactly what the reference agent's executor gets.
* ``executor_environment_one_shot`` pins one-shot Job_B processes: a leak confined to the one-shot path is
  invisible to a warm run of ``executor_environment`` (the default), and the other way round — so each scenario
  guards one path. (That the check fails on each leak is proven in ``test_checks_fail_on_broken_targets.py``.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.run.canaries import CREDENTIAL_VARIABLES, canary_value, planted_credentials
from harness.checks import Status
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.base import BuiltTarget, TargetEnvironment
from harness.targets.reference_profile import reference_profile
from harness.targets.reference import build_reference
from reference_agent.backends.process import scrubbed_env

ROOT = Path(__file__).resolve().parents[2]
SEEN_DURING_TURN: dict[str, str] = {}


def test_canaries_are_planted_and_the_environment_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABRICKS_HOST", "https://already.set")
    with planted_credentials() as planted:
        assert planted == list(CREDENTIAL_VARIABLES)
        assert all(os.environ[name] == canary_value(name) for name in CREDENTIAL_VARIABLES)
    assert os.environ["DATABRICKS_HOST"] == "https://already.set"
    assert not [name for name in CREDENTIAL_VARIABLES if name in os.environ and name != "DATABRICKS_HOST"]


def test_the_default_allow_list_is_what_the_reference_executor_gets(tmp_path: Path) -> None:
    assert set(scrubbed_env(str(tmp_path))) == set(reference_profile().executor_env_allowed)


def spy_on_environment(env: TargetEnvironment) -> BuiltTarget:
    """The reference agent, remembering the host environment its turns ran in (--target module:attr)."""
    built = build_reference(env)
    run_turn = built.run_turn

    async def spying(*args):
        SEEN_DURING_TURN.clear()
        SEEN_DURING_TURN.update(os.environ)
        return await run_turn(*args)

    built.run_turn = spying
    return built


def test_a_run_plants_canaries_and_a_scenario_pins_one_shot_job_b(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    scenario = load_scenario(ROOT / "scenarios" / "executor_environment_one_shot.yaml")
    result = run_scenario(scenario, RunOptions(target=f"{__name__}:spy_on_environment", llm_mode=LlmMode.SCRIPTED,
                                               executor="warm"))
    assert result.error is None, result.error
    assert {name: SEEN_DURING_TURN.get(name) for name in CREDENTIAL_VARIABLES} == {
        name: canary_value(name) for name in CREDENTIAL_VARIABLES}
    assert result.trace.planted_credentials == list(CREDENTIAL_VARIABLES)
    assert not any(name in os.environ for name in CREDENTIAL_VARIABLES)
    modes = {x.metrics["executor_process"]["mode"] for x in result.trace.executions}
    assert modes == {"one-shot"}  # pinned by the scenario, although the run asked for warm processes
    check = next(c for c in result.checks if c.name == "executor_env_clean")
    assert check.status is Status.PASS and "one-shot Job_B): sees only HOME, LANG, PATH" in check.evidence[0]


@pytest.mark.parametrize(("target", "blind_scenario"), [("executor_env_leak_one_shot", "executor_environment"),
                                                         ("executor_env_leak_warm", "executor_environment_one_shot")])
def test_each_scenario_guards_its_own_path(target: str, blind_scenario: str) -> None:
    """A leak in one path passes the scenario that runs the other: why there are two (the proofs show each fail)."""
    scenario = load_scenario(ROOT / "scenarios" / f"{blind_scenario}.yaml")
    result = run_scenario(scenario, RunOptions(target=f"tests.broken_targets:{target}", llm_mode=LlmMode.SCRIPTED))
    assert result.error is None, result.error
    assert next(c for c in result.checks if c.name == "executor_env_clean").status is Status.PASS
