"""A stale cassette — a model call whose request changed since recording — is an error, not a quiet pass.

The caller matcher pairs calls with recordings by caller alone, so without this a changed prompt would
replay the answers recorded for the old one. Every committed cassette replays without drift (the
conformance tests would fail otherwise); here a recording is altered to prove the check bites.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.checks.base import Status
from harness.cli import EXIT_OK, main
from harness.llm.drift import first_difference, is_model_call, normalized_body
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "single_delegation"
RECORDED = "Print what you need to see"
EDITED = "Print all you want to see"


@pytest.fixture
def stale_cassettes(tmp_path: Path) -> Path:
    """The scenario's cassette with one word of the analyst's recorded prompt changed (as if the agent's had)."""
    folder = tmp_path / "cassettes"
    folder.mkdir()
    text = (ROOT / "cassettes" / f"{SCENARIO}.yaml").read_text(encoding="utf-8")
    assert RECORDED in text
    (folder / f"{SCENARIO}.yaml").write_text(text.replace(RECORDED, EDITED), encoding="utf-8")
    return folder


def test_a_changed_prompt_makes_the_cassette_stale(stale_cassettes: Path) -> None:
    scenario = load_scenario(ROOT / "scenarios" / f"{SCENARIO}.yaml")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=stale_cassettes))

    cassette = result.check("cassette")
    assert result.error is None and not result.ok and cassette.failed
    problem = cassette.explanation
    assert f"the cassette {stale_cassettes / (SCENARIO + '.yaml')} is stale" in problem
    assert "databricks_analyst" in problem
    assert EDITED[:12] in problem and RECORDED[:12] in problem  # both sides of the difference
    assert f"rlm-conformance record --scenario {SCENARIO}" in problem
    # The checks still judged the scenario (on its scripted model): the report names an invariant, or none.
    assert result.check("stage_gating") is not None and result.trace is not None


def test_allow_drift_replays_a_stale_cassette(stale_cassettes: Path) -> None:
    scenario = load_scenario(ROOT / "scenarios" / f"{SCENARIO}.yaml")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=stale_cassettes,
                                               allow_drift=True))
    assert result.error is None
    assert not [c for c in result.checks if c.status is Status.FAIL]


@pytest.mark.slow
def test_the_cli_fails_on_drift_and_allow_drift_lets_it_pass(stale_cassettes: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    argv = ["run", "--scenario", SCENARIO, "--cassette-dir", str(stale_cassettes), "--no-progress",
            "--snapshot-dir", str(ROOT / "snapshots")]
    assert main(argv) != EXIT_OK
    assert "is stale" in " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert main([*argv, "--allow-drift"]) == EXIT_OK


def test_values_every_run_makes_afresh_are_not_drift() -> None:
    one = '{"text": "artifact 3f2a9c1d-5b6e-4f70-8a9b-0c1d2e3f4a5b at /tmp/pytest-1/volume/x.json, run 9f8e7d6c5b4a"}'
    two = '{"text": "artifact 00000000-1111-4222-8333-444444444444 at /tmp/rlm-abc/volume/x.json, run 0a1b2c3d4e5f"}'
    assert normalized_body(one.encode()) == normalized_body(two)
    assert normalized_body('{"text": "total is 200"}') != normalized_body('{"text": "total is 300"}')


def test_the_excerpts_show_where_the_requests_part() -> None:
    recorded, sent = first_difference("x" * 200 + "old tail", "x" * 200 + "new tail")
    assert recorded.endswith("old tail") and sent.endswith("new tail")
    assert len(recorded) < 120


def test_only_model_calls_are_compared() -> None:
    assert is_model_call("/v1beta/models/gemini-2.5-flash:generateContent")
    assert is_model_call("/v1beta/models/gemini-2.5-flash:countTokens")
    assert not is_model_call("/api/2.0/sql/statements")  # Databricks REST: timestamps and ids by nature
