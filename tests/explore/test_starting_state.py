"""Explore past the first wall (issue 51): a starting state from the profile or a seed scenario, and an
obstruction — a turn raising on every example — reported once while the search goes on past it.

The target (tests/broken_targets.py ``prompt_reads_state_key``) has two defects, one masking the other: its
analyst's instruction reads ``{silo}``, which the app sets before the first turn, and its job_builder writes
whole states (minimal_deltas). Scripted, offline, seed 0, no example database."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.broken_targets:prompt_reads_state_key"


def explore(tmp_path: Path, *args: str, examples: int = 6) -> int:
    return main(["explore", "--target", TARGET, "--seed", "0", "--no-database", "--no-progress", "--fail-on-find",
                 "-j", "1", "--max-examples", str(examples), "--shrink-runs", "6", "--out", str(tmp_path / "found"),
                 "--check", "minimal_deltas", *args])


def found(tmp_path: Path) -> list[str]:
    return sorted(p.stem for p in (tmp_path / "found").glob("*.yaml"))


def test_the_profiles_initial_state_starts_every_generated_session(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    profile = yaml.safe_load((ROOT / "reference_agent" / "conformance_profile.yaml").read_text(encoding="utf-8"))
    profile["initial_state"] = {"silo": "north"}
    (tmp_path / "rlm-profile.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")
    assert explore(tmp_path, "--profile", str(tmp_path / "rlm-profile.yaml")) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert ", 0 turns raised" in out
    (name,) = found(tmp_path)
    assert name.endswith("_minimal_deltas")
    written = yaml.safe_load((tmp_path / "found" / f"{name}.yaml").read_text(encoding="utf-8"))
    assert all(s["initial_state"]["silo"] == "north" for s in written["sessions"])


def test_a_seed_scenario_gives_its_state_and_questions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed = {"name": "north_silo", "description": "The app's first turn.", "context": {"sales": [1, 2]},
            "sessions": [{"user": "u", "initial_state": {"silo": "north"},
                          "turns": [{"user": "How many sales in the north?"}]}],
            "script": {"databricks_analyst": [{"text": "two"}]}}
    (tmp_path / "north_silo.yaml").write_text(yaml.safe_dump(seed), encoding="utf-8")
    assert explore(tmp_path, "--seed-scenario", str(tmp_path / "north_silo.yaml")) == 1
    assert ", 0 turns raised" in " ".join(capsys.readouterr().out.split())
    (name,) = found(tmp_path)
    written = yaml.safe_load((tmp_path / "found" / f"{name}.yaml").read_text(encoding="utf-8"))
    assert written["sessions"][0]["turns"][0]["user"] == "How many sales in the north?"
    assert written["sessions"][0]["initial_state"]["silo"] == "north"


def test_a_missing_state_key_that_blocks_every_turn_is_reported_once_then_seeded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No starting state: every turn raises on {silo}. Explore reports that once (turns_raised, its scenario
    reproducing it), seeds silo and finds the defect the crash masked."""
    assert explore(tmp_path, examples=10) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "obstruction: every turn of the first" in out and "silo='explore'" in out
    names = found(tmp_path)
    assert {n.split("_key_")[-1] for n in names} == {"minimal_deltas", "turns_raised"}, names
    obstruction = next(p for p in (tmp_path / "found").glob("*turns_raised.yaml")).read_text(encoding="utf-8")
    assert "Context variable not found: `silo`" in obstruction
    assert "silo" not in yaml.safe_load(obstruction)["sessions"][0].get("initial_state", {})


def test_explore_gets_past_an_outside_agents_first_wall_to_its_defect(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """tests/user_agents/silo_rlm from its roles alone: every turn raises on {silo} until explore seeds it; then its
    direct mutation of session.state is found by the check that owns it."""
    code = main(["explore", "--profile", "tests/user_agents/silo_rlm/rlm-profile.yaml", "--seed", "0",
                 "--no-database", "--no-progress", "--fail-on-find", "-j", "1", "--max-examples", "10",
                 "--shrink-runs", "6", "--out", str(tmp_path / "found"), "--check", "no_unpersisted_mutation",
                 "--check", "instructions_render"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1, out
    assert "silo='explore' in the starting state" in out and "reported once (instructions_render)" in out
    assert found(tmp_path) == ["found_silo_rlm_instructions_render", "found_silo_rlm_no_unpersisted_mutation"], out
