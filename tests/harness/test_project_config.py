"""``[tool.rlm-conformance]``: the loader (harness/project_config.py) and the CLI reading it.

The plugin's side is in ``test_plugin_config.py``. CLI runs are in-process (``main(argv)``) inside a
temporary project; none runs a scenario.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import EXIT_OK, EXIT_USAGE, main
from harness.project_config import ProjectConfigError, find_pyproject, load_project_config

SCENARIO = (Path(__file__).resolve().parents[2] / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose scenarios live in conformance/scenarios/, run from its tests/ sub-folder."""
    write(tmp_path / "pyproject.toml", '[tool.rlm-conformance]\nscenarios = "conformance/scenarios"\n')
    write(tmp_path / "conformance" / "scenarios" / "single_delegation.yaml", SCENARIO)
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


# --- the loader ----------------------------------------------------------------------------------------

def test_the_first_pyproject_upwards_is_used_even_without_the_table(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.rlm-conformance]\ntarget = "legacy"\n')
    inner = write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'\n")
    (tmp_path / "pkg" / "src").mkdir()
    assert find_pyproject(tmp_path / "pkg" / "src") == inner
    assert load_project_config(tmp_path / "pkg" / "src").target is None  # the parent's table does not leak in
    assert load_project_config(tmp_path).target == "legacy"


def test_keys_paths_and_both_spellings(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.rlm-conformance]\nscenarios = ["a", "b/c.yaml"]\nprofile = "p.yaml"\n'
                                       'llm-mode = "scripted"\nsession_service = "adk-memory"\ncassettes = "k"\n')
    config = load_project_config(tmp_path)
    assert config.scenarios == (tmp_path / "a", tmp_path / "b" / "c.yaml")
    assert (config.profile, config.cassettes, config.snapshots) == (tmp_path / "p.yaml", tmp_path / "k", None)
    assert (config.llm_mode, config.session_service) == ("scripted", "adk-memory")
    assert config.origin("session_service") == f"[tool.rlm-conformance] session-service in {tmp_path / 'pyproject.toml'}"


@pytest.mark.parametrize(("table", "message"), [
    ('scenario = "s"\n', "unknown key 'scenario' (did you mean 'scenarios'?). Known keys: target, profile,"),
    ('cassete = "c"\n', "unknown key 'cassete' (did you mean 'cassettes'?)"),
    ('llm-mode = "replya"\n', "key 'llm-mode': 'replya' is not one of replay, scripted, live (did you mean 'replay'?)"),
    ('backend = "cloud"\n', "key 'backend': 'cloud' is not one of local, databricks"),
    ("target = 3\n", "key 'target': Input should be a valid string, got 3"),
    ('scenarios = "s"\n[tool.rlm-conformance.x]\n', "unknown key 'x'"),
])
def test_a_bad_table_names_the_file_the_key_and_a_guess(tmp_path: Path, table: str, message: str) -> None:
    write(tmp_path / "pyproject.toml", "[tool.rlm-conformance]\n" + table)
    with pytest.raises(ProjectConfigError) as caught:
        load_project_config(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'pyproject.toml'}: invalid [tool.rlm-conformance]: ")
    assert message in str(caught.value)


def test_unreadable_toml_names_the_file(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.rlm-conformance\n")
    with pytest.raises(ProjectConfigError, match=r"pyproject.toml: cannot read it as TOML"):
        load_project_config(tmp_path)


# --- the CLI ---------------------------------------------------------------------------------------------

def test_cli_list_finds_the_configured_scenarios_from_a_sub_folder(project: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "single_delegation" in out and str(project / "conformance" / "scenarios") in out
    # Without the table the CLI looks for scenarios/ in the working folder, and says so.
    write(project / "pyproject.toml", "[project]\nname = 'x'\n")
    assert main(["list"]) == EXIT_USAGE
    assert "scenarios" in capsys.readouterr().err


def test_a_flag_beats_the_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "tests" / "mine" / "single_delegation.yaml", SCENARIO)
    assert main(["list", "--scenarios-dir", "mine"]) == EXIT_OK
    assert "1 scenario(s) in mine" in capsys.readouterr().out


def test_a_bad_target_from_the_table_names_the_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pyproject.toml", '[tool.rlm-conformance]\nscenarios = "conformance/scenarios"\n'
                                      'target = "nosuch"\n')
    assert main(["run", "--no-progress"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--target 'nosuch' is not a known target" in err
    assert f"(set by [tool.rlm-conformance] target in {project / 'pyproject.toml'})" in err
    assert main(["run", "--no-progress", "--target", "nosuch2"]) == EXIT_USAGE  # a flag's own value: no such note
    assert "set by" not in capsys.readouterr().err


def test_the_tables_llm_mode_is_used(project: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    write(project / "pyproject.toml", '[tool.rlm-conformance]\nscenarios = "conformance/scenarios"\n'
                                      'llm-mode = "live"\n')
    assert main(["run", "--no-progress"]) == EXIT_USAGE  # live without a key: refused before running anything
    assert "LLM mode 'live' needs a Gemini API key" in capsys.readouterr().err
    assert main(["record", "--no-progress"]) == EXIT_USAGE  # record keeps a configured live mode
    assert "LLM mode 'live' needs a Gemini API key" in capsys.readouterr().err


def test_a_bad_table_stops_the_cli_with_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project / "pyproject.toml", '[tool.rlm-conformance]\nscenario = "conformance/scenarios"\n')
    assert main(["list"]) == EXIT_USAGE
    assert "unknown key 'scenario' (did you mean 'scenarios'?)" in capsys.readouterr().err
    assert main(["explain", "stage_gating"]) == EXIT_OK  # commands that read no setting still work


def test_a_scenarios_own_profile_beats_the_tables_and_the_flag_beats_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The table's profile is the project's default: it overrode a scenario's own ``profile:`` line (issue 51), so
    a scenario written for another agent of the project ran against the default's target. ``--profile`` still
    wins over the scenario (the command line says so). This one runs a scenario (scripted, ~3 s) per command."""
    own = Path(__file__).resolve().parents[1] / "user_agents" / "agent_tool_rlm"
    write(tmp_path / "pyproject.toml", '[tool.rlm-conformance]\nprofile = "default.yaml"\nscenarios = "scenarios"\n'
                                       'llm-mode = "scripted"\n')
    write(tmp_path / "default.yaml", 'name: project_default\ntarget: "tests.user_agents.tool_rlm.agent:app"\n')
    scenario = (own / "scenarios" / "coder_then_run.yaml").read_text(encoding="utf-8")
    write(tmp_path / "scenarios" / "coder_then_run.yaml",
          scenario.replace("profile: ../rlm-profile.yaml", f"profile: {own / 'rlm-profile.yaml'}"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")
    main(["run", "--no-progress", "--reports-dir", str(tmp_path / "r1")])
    assert "Ran against target tests.user_agents.agent_tool_rlm.agent:app" in capsys.readouterr().out
    main(["run", "--no-progress", "--profile", "default.yaml", "--reports-dir", str(tmp_path / "r2")])
    assert "Ran against target tests.user_agents.tool_rlm.agent:app" in capsys.readouterr().out
