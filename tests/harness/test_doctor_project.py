"""``rlm-conformance doctor`` checks the project in the working folder (harness/doctor/project.py): the errors
``run`` would stop with, before a recording — it used to say "ready to record" on a misspelled profile field and
on a target that did not import."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.doctor.findings import Level
from harness.doctor.project import project_findings

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, *, target: str | None = None, profile: str = "name: mine\n",
             cassette: bool = True) -> Path:
    (tmp_path / "scenarios").mkdir(parents=True)
    shutil.copy(ROOT / "scenarios" / "single_delegation.yaml", tmp_path / "scenarios")
    if cassette:  # where run looks for it: the folder of the profile's name (harness/run/runner.py cassette_dir_for)
        (tmp_path / "cassettes" / "mine").mkdir(parents=True)
        shutil.copy(ROOT / "cassettes" / "single_delegation.yaml", tmp_path / "cassettes" / "mine")
    (tmp_path / "rlm-profile.yaml").write_text(profile, encoding="utf-8")
    table = '[tool.rlm-conformance]\nprofile = "rlm-profile.yaml"\n' + (f'target = "{target}"\n' if target else "")
    (tmp_path / "pyproject.toml").write_text(table, encoding="utf-8")
    return tmp_path


def _levels(findings) -> dict[str, Level]:  # noqa: ANN001
    return {f.check: f.level for f in findings}


def test_a_sound_project_is_ready(tmp_path: Path) -> None:
    levels = _levels(project_findings(_project(tmp_path)))
    assert levels == {"project": Level.OK, "profile": Level.OK, "scenarios": Level.OK, "target": Level.OK,
                      "cassettes": Level.OK}


def test_each_problem_run_would_stop_on_is_an_error_naming_it(tmp_path: Path) -> None:
    misspelled = project_findings(_project(tmp_path / "a", profile="name: mine\nsumary_key: digest\n"))
    [finding] = [f for f in misspelled if f.level is Level.ERROR]
    assert finding.check == "profile" and "rlm-profile.yaml:2: field 'sumary_key'" in finding.message
    assert "summary_key" in finding.message

    unimportable = project_findings(_project(tmp_path / "b", target="no_such_module_of_yours:app"))
    [finding] = [f for f in unimportable if f.level is Level.ERROR]
    assert finding.check == "target" and "no_such_module_of_yours" in finding.message

    service = _project(tmp_path / "d")
    (service / "pyproject.toml").write_text('[tool.rlm-conformance]\nsession-service = "no_such_store_mod:make"\n',
                                            encoding="utf-8")
    [finding] = [f for f in project_findings(service) if f.level is Level.ERROR]
    assert finding.check == "session service" and "no_such_store_mod" in finding.message

    broken = _project(tmp_path / "c")
    (broken / "scenarios" / "bad.yaml").write_text("name: bad\nsessions: [\n", encoding="utf-8")
    [finding] = [f for f in project_findings(broken) if f.level is Level.ERROR]
    assert finding.check == "scenarios" and "bad.yaml" in finding.message


def test_a_scenario_without_its_cassette_is_a_warning_saying_how_to_record(tmp_path: Path) -> None:
    findings = project_findings(_project(tmp_path, cassette=False))
    [finding] = [f for f in findings if f.check == "cassettes"]
    assert finding.level is Level.WARNING and "single_delegation" in finding.message
    assert "rlm-conformance record" in finding.fix


def test_the_doctor_exits_1_on_a_project_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_project(tmp_path, profile="name: mine\nsumary_key: digest\n"))
    assert main(["doctor", "--json"]) == 1
    assert "sumary_key" in capsys.readouterr().out
