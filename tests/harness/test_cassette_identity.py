"""Cassettes know their scenario: one recorded for another scenario, another target, or before the scenario's
script or inputs changed does not replay green — the cassette row fails naming what changed and the exact
re-record command, and the other checks still judge the scenario on its scripted model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.llm.identity import CassetteIdentity
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.scenario.script import TextStep

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cassettes(tmp_path: Path) -> Path:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    return folder


def _scenario(name: str):
    return load_scenario(ROOT / "scenarios" / f"{name}.yaml")


@pytest.mark.slow
def test_every_committed_cassette_carries_its_identity() -> None:
    from vcr.serializers import yamlserializer

    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        data = yamlserializer.deserialize(path.read_text(encoding="utf-8"))
        identity = (data.get("metadata") or {}).get("scenario") or {}
        assert identity.get("name") == path.stem, path
        assert set(identity.get("parts") or {}) == {"script", "inputs", "profile"}, path


def test_a_cassette_of_another_scenario_is_refused(cassettes: Path) -> None:
    shutil.copy(ROOT / "cassettes" / "exit_loop.yaml", cassettes / "single_delegation.yaml")
    result = run_scenario(_scenario("single_delegation"), RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=cassettes))
    cassette = result.check("cassette")
    assert cassette.failed and not result.ok
    assert "was recorded for scenario 'exit_loop', not 'single_delegation'" in cassette.explanation
    assert "rlm-conformance record --scenario single_delegation" in cassette.explanation
    # The checks judged the scenario anyway, on its scripted model: all of them pass on the reference agent.
    assert all(not c.failed for c in result.checks if c.name != "cassette")


def test_an_edited_script_names_the_part_that_changed(cassettes: Path) -> None:
    shutil.copy(ROOT / "cassettes" / "single_delegation.yaml", cassettes / "single_delegation.yaml")
    scenario = _scenario("single_delegation")
    script = dict(scenario.script)
    script["results_processor"] = [TextStep(text="A different summary.")]
    result = run_scenario(scenario.model_copy(update={"script": script}),
                          RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=cassettes))
    explanation = result.check("cassette").explanation
    assert "was recorded before the scenario changed: the model script (`script:`) changed" in explanation
    assert "sessions, turns" not in explanation


def test_identity_parts_change_with_what_shapes_the_traffic() -> None:
    scenario = _scenario("single_delegation")
    base = CassetteIdentity.of(scenario, target="reference", profile=None)
    turns = scenario.sessions[0].model_copy(update={"turns": [*scenario.sessions[0].turns] * 2})
    changed = CassetteIdentity.of(scenario.model_copy(update={"sessions": [turns]}), target="reference", profile=None)
    assert base.parts["inputs"] != changed.parts["inputs"] and base.parts["script"] == changed.parts["script"]
    assert base.mismatch(base.as_metadata()) is None
    assert "target 'reference', not 'mine:app'" in CassetteIdentity.of(
        scenario, target="mine:app", profile=None).mismatch(base.as_metadata())
    # A description or tag edit does not shape the traffic: the cassette stays valid.
    retitled = scenario.model_copy(update={"description": "Reworded.", "tags": ["x"]})
    assert CassetteIdentity.of(retitled, target="reference", profile=None) == base


def test_a_broken_target_replaying_a_foreign_cassette_still_names_the_broken_invariant(cassettes: Path) -> None:
    # The reference agent's cassette, replayed for a target without stage gating: the cassette row says it
    # is not this target's, and stage_gating — judged on the scripted model — says what broke.
    target = "tests.broken_targets:no_stage_gate"
    folder = cassettes / "tests.broken_targets_no_stage_gate"
    folder.mkdir()
    shutil.copy(ROOT / "cassettes" / "stale_glue_attempt.yaml", folder / "stale_glue_attempt.yaml")
    result = run_scenario(_scenario("stale_glue_attempt"),
                          RunOptions(target=target, llm_mode=LlmMode.REPLAY, cassette_dir=cassettes))
    assert result.check("cassette").failed
    assert "recorded against target 'reference'" in result.check("cassette").explanation
    assert result.check("stage_gating").failed


@pytest.mark.slow
def test_a_defect_that_changes_the_traffic_is_reported_by_its_check_not_only_as_a_stale_cassette(
        cassettes: Path) -> None:
    # As when the reference agent itself is broken: the cassette *is* this target's (identity rewritten to
    # match), but the broken agent makes other model calls than were recorded. Replay alone could only say
    # "stale cassette"; the scripted re-run says which invariant broke.
    target = "tests.broken_targets:no_stage_gate"
    folder = cassettes / "tests.broken_targets_no_stage_gate"
    folder.mkdir()
    text = (ROOT / "cassettes" / "stale_glue_attempt.yaml").read_text(encoding="utf-8")
    (folder / "stale_glue_attempt.yaml").write_text(text.replace("target: reference", f"target: {target}", 1),
                                                    encoding="utf-8")
    result = run_scenario(_scenario("stale_glue_attempt"),
                          RunOptions(target=target, llm_mode=LlmMode.REPLAY, cassette_dir=cassettes))
    cassette = result.check("cassette")
    assert cassette.failed and "recorded against target" not in cassette.explanation
    assert result.check("stage_gating").failed
