"""Where explore writes its findings and what they hold (issue 51): found scenarios carry relative paths only
(they are meant to be committed), and the default output is not a folder the next plain ``run`` globs (a found
scenario has no cassette or snapshot yet: it would turn that run red).

The run is a stand-in failing one check on every conversation, in this process (``--example-timeout 0``): only
what is written is judged here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.checks.base import CheckResult, Status
from harness.cli import main
from harness.result import ScenarioResult
from harness.scenario.loader import load_scenarios

ROOT = Path(__file__).resolve().parents[2]


def _failing(scenario, options):  # noqa: ANN001, ANN202
    check = CheckResult("none_deletes", Status.FAIL, "a None value was stored", ("key 'x' kept None",))
    return ScenarioResult(scenario=scenario.name, description="", target="reference", llm_mode="scripted",
                          session_service="delta", checks=(check,), trace=None, duration_s=0.0)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("harness.run.runner.run_scenario", _failing)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    return tmp_path


def test_found_scenarios_hold_relative_paths_only(project: Path) -> None:
    profile = project / "conf" / "rlm-profile.yaml"
    profile.parent.mkdir()
    shutil.copy(ROOT / "reference_agent" / "conformance_profile.yaml", profile)
    out = project / "regressions" / "found"
    assert main(["explore", "--no-progress", "--no-database", "--example-timeout", "0", "--max-examples", "1", "--out", str(out),
                 "--profile", str(profile)]) == 0
    text = (out / "found_reference_none_deletes.yaml").read_text(encoding="utf-8")
    assert str(project) not in text and str(project.resolve()) not in text, text
    assert "--scenarios-dir regressions/found" in text and "--profile conf/rlm-profile.yaml" in text
    assert "profile: ../../conf/rlm-profile.yaml" in text


def test_the_default_output_is_not_what_the_next_run_globs(project: Path) -> None:
    assert main(["explore", "--no-progress", "--no-database", "--example-timeout", "0", "--max-examples", "1"]) == 0
    written = project / ".rlm-conformance" / "found" / "found_reference_none_deletes.yaml"
    assert written.is_file()
    assert load_scenarios("scenarios") == []  # what a plain `run` loads: nothing explore wrote


def test_fail_on_find_fails_only_on_what_the_baseline_does_not_accept(project: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["explore", "--no-progress", "--no-database", "--example-timeout", "0", "--max-examples", "1", "--fail-on-find"]
    assert main([*flags, "--write-baseline", "accepted.yaml"]) == 0
    text = (project / "accepted.yaml").read_text(encoding="utf-8")
    assert "check: none_deletes" in text and "where: found_reference_none_deletes" in text
    capsys.readouterr()
    assert main([*flags, "--baseline", "accepted.yaml"]) == 0
    assert "accepted by accepted.yaml: none_deletes in found_reference_none_deletes" in capsys.readouterr().out
    (project / "accepted.yaml").write_text("accepted:\n  - {check: none_deletes, where: elsewhere, reason: r}\n"
                                           "  - {check: stage_gating, where: '*', reason: fixed}\n", encoding="utf-8")
    assert main([*flags, "--baseline", "accepted.yaml"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "no longer occurs: stage_gating in every scenario (fixed)" in out
