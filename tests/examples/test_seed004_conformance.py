"""The second target in CI, through the public interfaces only: the CLI (its entry point, in-process), its profile
file and its scenarios.

examples/seed004_rlm (seed 004's layout, names and keys of its own) replays green from its cassettes; the
broken variant, run against the same scenarios, fails the checks that name its defect — and only those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = "examples/seed004_rlm/scenarios"
BROKEN = "examples.seed004_rlm_broken.agent:app"
DEFECT_CHECKS = {"stale_flags_cleared"}


def _run(tmp_path: Path, *flags: str) -> tuple[int, dict]:
    """``rlm-conformance run`` of the example's scenarios, in this process. This folder's conftest points google-genai
    at a dead port for the in-process agent tests; the CLI replays on its own, so those variables are dropped."""
    from harness.cli import main

    reports = tmp_path / "reports"
    with pytest.MonkeyPatch.context() as patch:
        for name in ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
            patch.delenv(name, raising=False)
        patch.chdir(ROOT)
        code = main(["run", "--no-progress", "--scenarios-dir", SCENARIOS, "--reports-dir", str(reports),
                     "--format", "json", *flags])
    assert (reports / "conformance.json").is_file()
    return code, json.loads((reports / "conformance.json").read_text(encoding="utf-8"))


def _failed(report: dict) -> dict[str, set[str]]:
    return {r["scenario"]: {c["name"] for c in r["checks"] if c["status"] == "fail"} for r in report["results"]}


@pytest.mark.slow
def test_the_example_agent_replays_green(tmp_path: Path) -> None:
    code, report = _run(tmp_path)
    assert code == 0, _failed(report)
    assert all(r["target"] == "examples.seed004_rlm.agent:app" for r in report["results"])
    assert all(r["session_service"] == "InMemorySessionService" for r in report["results"])


@pytest.mark.slow
def test_the_broken_variant_fails_the_checks_that_name_its_defect_and_no_other(tmp_path: Path) -> None:
    code, report = _run(tmp_path, "--target", BROKEN, "--llm-mode", "scripted", "--snapshot-dir", str(tmp_path), "--snapshot-update")
    assert code == 1
    failed = _failed(report)
    # Only the two-turn scenario has a previous turn whose flags must be cleared.
    assert failed["seed004_two_turns"] >= DEFECT_CHECKS, failed
    for scenario, names in failed.items():
        assert names <= DEFECT_CHECKS, (scenario, names)
