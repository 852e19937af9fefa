"""``rlm-conformance init`` on tests/init_fixture_agent.py: the three artifacts, what is inferred and why, the
smoke scenario green in scripted mode, never overwriting without --force, pyproject.toml kept byte for byte
outside the new table, atomic writes."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import yaml

import tests.init_fixture_agent as fixture
from harness.cli import EXIT_OK, EXIT_USAGE, main
from harness.init.project import (PROFILE_FILE, PYPROJECT, InitError, init_project, summary_lines,
                                  write_atomic)
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario, load_scenarios
from harness.targets.choice import scenario_profile_path
from harness.targets.profile import load_profile
from harness.targets.profile_schema import SCHEMA_PATH, render_json_schema

APP = "tests.init_fixture_agent:app"
ROOT_AGENT = "tests.init_fixture_agent:root_agent"
FACTORY = "tests.init_fixture_agent:build_app"
TOOL_RLM = "tests.user_agents.tool_rlm.agent:app"
OUTPUT_KEY_RLM = "tests.user_agents.output_key_rlm.agent:app"
AGENT_TOOL_RLM = "tests.user_agents.agent_tool_rlm.agent:app"


def _profile_lines(directory: Path) -> dict[str, str]:
    """field -> its line, from the drafted profile."""
    lines = (directory / PROFILE_FILE).read_text(encoding="utf-8").splitlines()
    return {line.split(":", 1)[0]: line for line in lines if line and not line.startswith("#")}


def _no_temp_files(directory: Path) -> None:
    assert not [p for p in directory.rglob("*.tmp")], "a temporary file was left behind"


def _run_green(directory: Path, target: str):
    scenario = load_scenario(directory / "scenarios" / "smoke.yaml")
    path = scenario_profile_path(scenario)
    assert path == (directory / PROFILE_FILE).resolve()
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, target=target, profile=load_profile(path),
                                               profile_path=path))
    failed = [f"{c.name}: {c.explanation} {c.evidence}" for c in result.checks if c.status.value == "fail"]
    assert result.status == "pass", result.error or failed or [str(t.outcome) for t in result.crashed_turns]
    assert next(c for c in result.checks if c.name == "script").status.value == "pass"
    return result


# --- the artifacts ---------------------------------------------------------------------------------------------


def test_init_writes_a_profile_a_smoke_scenario_and_the_config_table(tmp_path: Path) -> None:
    result = init_project(APP, tmp_path)
    assert [(p.relative_to(tmp_path).as_posix(), a) for p, a in result.written] == [
        (PROFILE_FILE, "created"), ("scenarios/smoke.yaml", "created"), (PYPROJECT, "created")]

    text = (tmp_path / PROFILE_FILE).read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    schema_ref = first.split("$schema=", 1)[1]
    assert (tmp_path / schema_ref).resolve() == SCHEMA_PATH or Path(schema_ref) == SCHEMA_PATH
    assert "python -m harness.targets.profile_schema --check rlm-profile.yaml" in text

    profile = load_profile(tmp_path / PROFILE_FILE)
    assert (profile.name, profile.target, profile.loop_agent, profile.analyst, profile.delegate_tool) == (
        "init_fixture", APP, "rlm_loop", "coder", "run_code")
    assert (profile.job_builder, profile.results_processor, profile.summary_key, profile.exit_tool) == (
        "code_runner", "reviewer", fixture.SUMMARY, "exit_loop")
    assert profile.app_tools == ("save_note",)
    assert profile.delegation_key is None and profile.contract is None and profile.final_answer_key is None

    lines = _profile_lines(tmp_path)
    for name in ("name", "loop_agent", "analyst", "delegate_tool", "job_builder", "results_processor",
                 "summary_key", "exit_tool", "app_tools"):
        assert "# inferred: " in lines[name], lines[name]
    assert "'run_code'" in lines["analyst"] and "CodeRunner" in lines["job_builder"]
    for name in ("final_answer_key", "termination_key", "iteration_key", "history_key", "contract", "context_key"):
        assert lines[name].startswith(f"{name}: null  # TODO: "), lines[name]
    assert lines["delegation_key"].startswith("delegation_key: null  # not needed while delegate_tool is set")

    config = tomllib.loads((tmp_path / PYPROJECT).read_text(encoding="utf-8"))
    assert config == {"tool": {"rlm-conformance": {"target": APP, "profile": PROFILE_FILE, "scenarios": "scenarios",
                                                   "cassettes": "cassettes", "snapshots": "snapshots"}}}
    _no_temp_files(tmp_path)


def test_smoke_scenario_loads_and_scripts_the_agents_a_turn_reaches(tmp_path: Path) -> None:
    init_project(APP, tmp_path)
    [scenario] = load_scenarios(tmp_path / "scenarios")
    assert scenario.name == "smoke" and scenario.profile == f"../{PROFILE_FILE}" and scenario.max_iterations == 1
    assert len(scenario.sessions) == 1 and len(scenario.sessions[0].turns) == 1
    assert list(scenario.script) == ["intake", "coder"]  # the gated reviewer is left out, and says why
    assert all(len(steps) == 1 and steps[0].text for steps in scenario.script.values())
    text = (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert "# reviewer: not scripted — the results processor, gated by GatedReviewer._run_async_impl" in text
    assert not scenario.expect.checks.skip  # an unmapped concept is n/a, never a reason to skip a check


def test_smoke_scenario_runs_green_in_scripted_mode(tmp_path: Path) -> None:
    init_project(APP, tmp_path)
    _run_green(tmp_path, APP)


def test_a_root_agent_and_a_factory_work_too_and_the_factory_is_called_once(tmp_path: Path) -> None:
    init_project(ROOT_AGENT, tmp_path / "agent")
    lines = _profile_lines(tmp_path / "agent")
    assert lines["name"] == "name: pipeline  # inferred: the root agent's name (the target is an agent)"
    before = fixture.build_app.calls
    init_project(FACTORY, tmp_path / "factory")
    assert fixture.build_app.calls == before + 1
    assert load_profile(tmp_path / "factory" / PROFILE_FILE).name == "init_fixture"
    _run_green(tmp_path / "factory", FACTORY)


def test_pruning_plugins_are_inferred_from_app_plugins(tmp_path: Path) -> None:
    init_project("tests.init_fixture_agent:app_with_pruning", tmp_path)
    profile = load_profile(tmp_path / PROFILE_FILE)
    assert profile.pruning_plugins == ("FixtureContextPruningPlugin", "RlmContextPruningPlugin")
    assert "# inferred: App.plugins holds FixtureContextPruningPlugin" in _profile_lines(tmp_path)["pruning_plugins"]
    init_project(APP, tmp_path / "plain")
    assert "# TODO: the default" in _profile_lines(tmp_path / "plain")["pruning_plugins"]


def test_a_tool_delegating_agent_without_an_executor(tmp_path: Path) -> None:
    """tests/user_agents/tool_rlm: the delegate tool runs the code; its summarizer is gated by nothing, so the
    smoke scenario scripts it and stage_gating — not the script judge — reports the extra model call."""
    init_project(TOOL_RLM, tmp_path)
    profile = load_profile(tmp_path / PROFILE_FILE)
    assert (profile.analyst, profile.delegate_tool, profile.results_processor, profile.summary_key) == (
        "planner", "run_python", "summarizer", "notes")
    assert profile.job_builder is None and profile.exit_tool is None
    assert "# TODO: " in _profile_lines(tmp_path)["execution_key"]
    scenario = load_scenario(tmp_path / "scenarios" / "smoke.yaml")
    assert list(scenario.script) == ["planner", "summarizer"]
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, target=TOOL_RLM,
                                               profile=load_profile(tmp_path / PROFILE_FILE)))
    verdicts = {c.name: c.status.value for c in result.checks}
    assert result.error is None and not result.crashed_turns
    assert verdicts["script"] == "pass" and verdicts["stage_gating"] == "fail"


def test_an_output_key_delegating_agent_gets_a_green_smoke(tmp_path: Path) -> None:
    """tests/user_agents/output_key_rlm: the analyst's output_key holds every answer and its runner consumes a
    plain one without running it (clears the key). The smoke's plain answer counted as a delegation never
    executed — init's own smoke failed stage_gating on a healthy agent (a newcomer's report). Now, with
    delegation_pattern left null (examples/seed004_rlm executes a plain answer as 'no code': init cannot know which
    an agent does), the cleared answer is declined, and said so; with a pattern, it is no delegation at all."""
    init_project(OUTPUT_KEY_RLM, tmp_path)
    profile = load_profile(tmp_path / PROFILE_FILE)
    assert (profile.analyst, profile.delegate_tool, profile.delegation_key, profile.delegation_pattern) == (
        "analyst", None, "pending_code", None)
    assert profile.job_builder == "runner" and profile.execution_key is None
    assert "# TODO: with delegation_key: a regex only code matches" in _profile_lines(tmp_path)["delegation_pattern"]
    text = (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert "a `- text:` answer holding the code (written to 'pending_code')" in text
    gating = next(c for c in _run_green(tmp_path, OUTPUT_KEY_RLM).checks if c.name == "stage_gating")
    assert "1 'pending_code' write(s) runner cleared without running, counted as declined" in gating.explanation
    profile_text = (tmp_path / PROFILE_FILE).read_text(encoding="utf-8")
    (tmp_path / PROFILE_FILE).write_text(profile_text.replace("delegation_pattern: null", 'delegation_pattern: "```"'),
                                         encoding="utf-8")
    gating = next(c for c in _run_green(tmp_path, OUTPUT_KEY_RLM).checks if c.name == "stage_gating")
    assert "0 fresh delegation(s), 0 execution(s)" in gating.explanation and "declined" not in gating.explanation

    # A scripted delegation in the agent's own terms is one delegation, one execution, one processor run.
    code = "```python\\nprint('FINAL: 4')\\n```"  # YAML escapes: the fence needs its newlines
    delegating = text.replace('- text: "Hello! No code is needed to answer this."', f'- text: "{code}"')
    delegating += '  processor:\n    - text: "It printed the answer, 4."\n'
    (tmp_path / "scenarios" / "smoke.yaml").write_text(delegating, encoding="utf-8")
    gating = next(c for c in _run_green(tmp_path, OUTPUT_KEY_RLM).checks if c.name == "stage_gating")
    assert "1 fresh delegation(s), 1 execution(s), 1 processor run(s)" in gating.explanation


def test_an_agent_behind_an_agent_tool_is_listed_and_named_in_the_smoke_scenario(tmp_path: Path) -> None:
    """tests/user_agents/agent_tool_rlm: the coder is in no sub_agents list, only behind solver's AgentTool. init
    listed the root agent alone; now the coder is in the tree, and the smoke scenario says why it is not scripted
    (its plain answer never calls the tool) — and stays green."""
    result = init_project(AGENT_TOOL_RLM, tmp_path)
    assert result.draft.agents == ["solver", "coder"]
    profile = load_profile(tmp_path / PROFILE_FILE)  # no LoopAgent: the root's own tool calls are the iterations
    assert (profile.loop_agent, profile.analyst, profile.delegate_tool) == (None, "solver", "run_code")
    assert "the tree has no LoopAgent" in _profile_lines(tmp_path)["analyst"]
    assert "# Agents in the tree: solver, coder" in (tmp_path / PROFILE_FILE).read_text(encoding="utf-8")
    assert result.draft.smoke_agents == ["solver"] and [name for name, _ in result.draft.unscripted] == ["coder"]
    text = (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert "# coder: not scripted — behind an AgentTool of solver, it runs only when solver's model calls" in text
    _run_green(tmp_path, AGENT_TOOL_RLM)


def test_the_session_service_line_is_the_target_modules_factory_or_a_comment_saying_what_it_is_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """init never wrote session-service: a team's DatabaseSessionService factory beside its App went unused and the
    first run quietly used ADK's InMemorySessionService. Now the table names the module's factory, the summary says
    so, and the smoke scenario runs green on it; a module with none gets a commented line saying what it is for."""
    result = init_project(AGENT_TOOL_RLM, tmp_path / "own")
    table = tomllib.loads((tmp_path / "own" / PYPROJECT).read_text(encoding="utf-8"))["tool"]["rlm-conformance"]
    spec = "tests.user_agents.agent_tool_rlm.sessions:sqlite_sessions"
    assert table["session-service"] == spec
    assert any(line.startswith(f"Session service: {spec} (inferred: ") for line in summary_lines(result))
    monkeypatch.chdir(tmp_path / "own")  # the project folder: the factory's relative sqlite file must not land here
    scenario = load_scenario(tmp_path / "own" / "scenarios" / "smoke.yaml")
    path = scenario_profile_path(scenario)
    run = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, target=AGENT_TOOL_RLM, session_service=spec,
                                            profile=load_profile(path), profile_path=path))
    assert run.status == "pass" and run.session_service == "DatabaseSessionService", run.error
    assert not (tmp_path / "own" / "sessions.db").exists()

    result = init_project(APP, tmp_path / "none")
    text = (tmp_path / "none" / PYPROJECT).read_text(encoding="utf-8")
    assert "session-service" not in tomllib.loads(text)["tool"]["rlm-conformance"]
    assert '# session-service = "package.module:factory"  # tests.init_fixture_agent defines none; unset: every ' \
           "run uses ADK's InMemorySessionService" in text
    assert any(line.startswith("Session service: not set, left as a comment in pyproject.toml")
               for line in summary_lines(result))


def test_builtin_targets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InitError, match="ships its own profile"):
        init_project("reference", tmp_path)
    assert not list(tmp_path.iterdir())


# --- never overwrite without --force -----------------------------------------------------------------------------


def test_existing_files_are_named_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / PROFILE_FILE).write_text("analyst: mine\n", encoding="utf-8")
    with pytest.raises(InitError) as info:
        init_project(APP, tmp_path)
    message = str(info.value)
    assert str(tmp_path / PROFILE_FILE) in message and "--force" in message and "nothing was written" in message
    assert (tmp_path / PROFILE_FILE).read_text(encoding="utf-8") == "analyst: mine\n"
    assert not (tmp_path / "scenarios").exists() and not (tmp_path / PYPROJECT).exists()


def test_force_overwrites(tmp_path: Path) -> None:
    init_project(APP, tmp_path)
    (tmp_path / PROFILE_FILE).write_text("analyst: mine\n", encoding="utf-8")
    (tmp_path / "scenarios" / "smoke.yaml").write_text("edited\n", encoding="utf-8")
    result = init_project(APP, tmp_path, force=True)
    assert [a for _, a in result.written] == ["overwritten", "overwritten", "replaced"]
    assert load_profile(tmp_path / PROFILE_FILE).analyst == "coder"
    assert load_scenario(tmp_path / "scenarios" / "smoke.yaml").name == "smoke"
    _no_temp_files(tmp_path)


def test_other_scenarios_in_the_folder_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.yaml").write_text("keep me\n", encoding="utf-8")
    init_project(APP, tmp_path)
    assert (tmp_path / "scenarios" / "mine.yaml").read_text(encoding="utf-8") == "keep me\n"


# --- pyproject.toml --------------------------------------------------------------------------------------------

PYPROJECT_TEXT = """\
# my project
[project]
name = "my-agent"   # keep this comment
version = "0.1"
dependencies = [
  "google-adk",
]

[tool.ruff]
line-length = 100
"""


def test_the_table_is_added_and_everything_else_kept_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / PYPROJECT).write_text(PYPROJECT_TEXT, encoding="utf-8")
    result = init_project(APP, tmp_path)
    assert result.written[-1][1] == "added"
    text = (tmp_path / PYPROJECT).read_text(encoding="utf-8")
    assert text.startswith(PYPROJECT_TEXT + "\n[tool.rlm-conformance]\n")
    data = tomllib.loads(text)
    assert data["tool"]["ruff"] == {"line-length": 100} and data["project"]["name"] == "my-agent"
    assert data["tool"]["rlm-conformance"]["target"] == APP


def test_a_file_without_a_final_newline(tmp_path: Path) -> None:
    (tmp_path / PYPROJECT).write_text(PYPROJECT_TEXT.rstrip("\n"), encoding="utf-8")
    init_project(APP, tmp_path)
    text = (tmp_path / PYPROJECT).read_text(encoding="utf-8")
    assert text.startswith(PYPROJECT_TEXT.rstrip("\n") + "\n\n[tool.rlm-conformance]\n")


def test_an_existing_table_is_refused_without_force_naming_the_file(tmp_path: Path) -> None:
    original = PYPROJECT_TEXT + '\n[tool.rlm-conformance]\ntarget = "old:app"\n'
    (tmp_path / PYPROJECT).write_bytes(original.encode())
    with pytest.raises(InitError, match=rf"{PYPROJECT} \(its \[tool.rlm-conformance\] table\)"):
        init_project(APP, tmp_path)
    assert (tmp_path / PYPROJECT).read_bytes() == original.encode()
    assert not (tmp_path / PROFILE_FILE).exists()


def test_force_replaces_only_the_table(tmp_path: Path) -> None:
    head = PYPROJECT_TEXT + "\n"
    tail = "\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"
    (tmp_path / PYPROJECT).write_text(head + '[tool.rlm-conformance]\ntarget = "old:app"\nextra = 1\n' + tail,
                                      encoding="utf-8")
    init_project(APP, tmp_path, force=True)
    text = (tmp_path / PYPROJECT).read_text(encoding="utf-8")
    assert text.startswith(head + "[tool.rlm-conformance]\n") and text.endswith(tail)
    data = tomllib.loads(text)
    assert data["tool"]["rlm-conformance"]["target"] == APP and "extra" not in data["tool"]["rlm-conformance"]
    assert data["tool"]["pytest"] == {"ini_options": {"testpaths": ["tests"]}}


@pytest.mark.parametrize("text", ['tool = {rlm-conformance = {target = "old:app"}}\n',
                                  '[tool]\nrlm-conformance.target = "old:app"\n'])
def test_a_table_in_another_form_is_not_rewritten(tmp_path: Path, text: str) -> None:
    (tmp_path / PYPROJECT).write_text(text, encoding="utf-8")
    with pytest.raises(InitError, match="does not rewrite"):
        init_project(APP, tmp_path, force=True)
    assert (tmp_path / PYPROJECT).read_text(encoding="utf-8") == text
    assert not (tmp_path / PROFILE_FILE).exists()


def test_a_pyproject_the_table_cannot_join_is_left_alone(tmp_path: Path) -> None:
    text = "tool = {ruff = {line-length = 100}}\n"  # an inline [tool]: no [tool.x] table may follow
    (tmp_path / PYPROJECT).write_text(text, encoding="utf-8")
    with pytest.raises(InitError, match="invalid TOML"):
        init_project(APP, tmp_path)
    assert (tmp_path / PYPROJECT).read_text(encoding="utf-8") == text
    assert not (tmp_path / PROFILE_FILE).exists()


def test_an_unreadable_pyproject_is_named(tmp_path: Path) -> None:
    (tmp_path / PYPROJECT).write_text("[project\n", encoding="utf-8")
    with pytest.raises(InitError, match=rf"{PYPROJECT}: cannot read it as TOML"):
        init_project(APP, tmp_path)
    assert not (tmp_path / PROFILE_FILE).exists()


# --- atomic writes ---------------------------------------------------------------------------------------------


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / PYPROJECT
    path.write_text("old = 1\n", encoding="utf-8")
    os.chmod(path, 0o640)

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new = 2\n")
    assert path.read_text(encoding="utf-8") == "old = 1\n"
    _no_temp_files(tmp_path)
    monkeypatch.undo()
    write_atomic(path, "new = 2\n")
    assert path.read_text(encoding="utf-8") == "new = 2\n" and path.stat().st_mode & 0o777 == 0o640


def test_new_files_get_the_permissions_open_would_give_them(tmp_path: Path) -> None:
    """init, import and explore write through a temporary file (mkstemp: 0600); the files they make are for the
    team to review and commit, so they get 0666 less the umask, as any editor would make them."""
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "scenarios" / "smoke.yaml", "name: smoke\n")
        os.umask(0o022)
        write_atomic(tmp_path / "rlm-profile.yaml", "name: x\n")
    finally:
        os.umask(old)
    assert (tmp_path / "scenarios" / "smoke.yaml").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "rlm-profile.yaml").stat().st_mode & 0o777 == 0o644


def test_a_failure_midway_leaves_whole_files_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        if str(dst).endswith("smoke.yaml"):
            raise OSError("no space left")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError):
        init_project(APP, tmp_path)
    load_profile(tmp_path / PROFILE_FILE)  # written whole before the failure
    assert not (tmp_path / "scenarios" / "smoke.yaml").exists() and not (tmp_path / PYPROJECT).exists()
    _no_temp_files(tmp_path)


# --- the command -------------------------------------------------------------------------------------------------


def test_cli_init_prints_what_it_wrote_and_the_next_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(Path(fixture.__file__).resolve().parents[1]))
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--target", APP]) == EXIT_OK
    out = capsys.readouterr().out
    assert "rlm-profile.yaml  (created)" in out and "smoke.yaml  (created)" in out
    assert "pyproject.toml  (created)" in out and "Smoke scenario scripts: intake, coder; not scripted: reviewer" in out
    for command in ("rlm-conformance run --llm-mode scripted", "rlm-conformance record", "rlm-conformance run"):
        assert command in out
    assert "--scenarios-dir" not in out  # written here: the bare commands work from here

    assert main(["init", "--target", APP]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "these exist already" in err and "--force" in err and "Traceback" not in err
    assert main(["init", "--target", APP, "--force"]) == EXIT_OK


def test_cli_init_elsewhere_names_the_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--target", APP, "--dir", str(tmp_path / "proj")]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"--scenarios-dir {tmp_path / 'proj' / 'scenarios'}" in out


def test_cli_init_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == EXIT_USAGE
    assert "--target is required" in capsys.readouterr().err
    assert main(["init", "--target", "tests.init_fixture_agent:nope"]) == EXIT_USAGE
    said = capsys.readouterr().err
    assert "has no attribute 'nope'" in said
    # The hint lists what the module made, not the classes it imported (LoopAgent is no target).
    assert "It defines:" in said and "LoopAgent" not in said and "LlmAgent" not in said


def test_cli_init_schema_prints_the_profile_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--schema"]) == EXIT_OK
    assert capsys.readouterr().out == render_json_schema()


def test_the_drafted_profile_is_plain_yaml_with_a_comment_on_each_field(tmp_path: Path) -> None:
    init_project(APP, tmp_path)
    data = yaml.safe_load((tmp_path / PROFILE_FILE).read_text(encoding="utf-8"))
    assert all(" # " in line for line in _profile_lines(tmp_path).values())
    assert set(data) == set(_profile_lines(tmp_path))


def test_the_smoke_comment_names_every_plugin_that_may_gate_the_processor() -> None:
    """Which plugin callback returns early cannot be read from the tree: with a telemetry plugin listed before
    the stage gate, naming the first one blamed the wrong plugin (issue 31)."""
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.plugins.base_plugin import BasePlugin

    from harness.init.project import _gate

    class Telemetry(BasePlugin):
        async def before_model_callback(self, *, callback_context, llm_request):
            return None

    class StageGate(BasePlugin):
        async def before_agent_callback(self, *, agent, callback_context):
            return None

    processor = LlmAgent(name="processor", model="gemini-2.5-flash")
    both = App(name="gated", root_agent=processor, plugins=[Telemetry(name="t"), StageGate(name="g")])
    assert _gate(processor, both) == ("one of the plugin callbacks Telemetry.before_model_callback, "
                                      "StageGate.before_agent_callback")
    only = App(name="gated", root_agent=processor, plugins=[StageGate(name="g")])
    assert _gate(processor, only) == "plugin StageGate.before_agent_callback"
    assert _gate(processor, App(name="plain", root_agent=processor)) is None


def test_a_shared_service_instance_is_named_with_what_to_write_instead(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A module-level instance (or a Runner holding one) would be shared by every scenario: not drafted as the line,
    but named in the comment; a class of the team's own is drafted (called bare, as docs/your-agent.md says)."""
    from harness.init.session_service import draft_session_service

    (tmp_path / "inst_agent.py").write_text(
        "from google.adk.sessions import InMemorySessionService\nsessions = InMemorySessionService()\n",
        encoding="utf-8")
    (tmp_path / "own_agent.py").write_text(
        "from google.adk.sessions import InMemorySessionService\nclass TeamSessions(InMemorySessionService):\n"
        "    pass\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    shared = draft_session_service("inst_agent:app")
    assert shared.spec is None and "inst_agent.sessions holds an instance of InMemorySessionService, which every " \
                                   "scenario would share" in shared.why
    assert shared.comment.startswith('# session-service = "package.module:factory"  # inst_agent.sessions')
    assert draft_session_service("own_agent:app").spec == "own_agent:TeamSessions"


DIGEST_RLM = "tests.user_agents.digest_rlm.agent:app"


def test_a_processor_written_in_code_and_the_teams_driver_are_drafted(tmp_path: Path) -> None:
    """tests/user_agents/digest_rlm: the summary the coder's instruction shows ({user:summary?}) is written by a
    BaseAgent digest, not an LlmAgent's output_key; its module holds run_conversation(runner, user_id, session_id,
    message), the documented driver parameter names. init drafted neither; the smoke stays green with both."""
    init_project(DIGEST_RLM, tmp_path)
    profile = load_profile(tmp_path / PROFILE_FILE)
    assert (profile.job_builder, profile.results_processor, profile.summary_key) == ("runner", "digest",
                                                                                       "user:summary")
    assert profile.driver == "tests.user_agents.digest_rlm.agent:run_conversation"
    lines = _profile_lines(tmp_path)
    assert "# inferred: " in lines["results_processor"] and "# inferred: " in lines["driver"]
    assert "not needed" in lines["summary_author"]
    result = _run_green(tmp_path, DIGEST_RLM)
    assert all(t.outcome.reported_by for t in result.trace.turns)


def test_a_summary_the_executor_writes_itself_is_drafted_as_its_summary_author() -> None:
    from google.adk.agents import LlmAgent, LoopAgent
    from google.adk.apps import App

    from harness.init.project import infer_profile
    from tests.user_agents.digest_rlm.agent import CodeRunner, Digest, run_code

    class SummarisingRunner(CodeRunner):
        def summary_key(self) -> str:
            return "exec_summary"  # its code names the key the coder's instruction shows

    coder = LlmAgent(name="coder", model="gemini-2.5-flash", tools=[run_code], instruction="Notes: {exec_summary?}")
    app = App(name="selfsum", root_agent=LoopAgent(name="loop", sub_agents=[coder, SummarisingRunner(name="runner"),
                                                                            Digest(name="digest")]))
    draft = infer_profile("pkg.agent:app", app)
    assert (draft.value("job_builder"), draft.value("summary_author"), draft.value("summary_key"),
            draft.value("results_processor")) == ("runner", "runner", "exec_summary", None)
