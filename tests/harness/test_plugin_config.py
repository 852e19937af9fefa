"""The plugin configured the way a team configures it in their own project: pyproject.toml, ini, flags.

Like ``test_pytest_plugin.py``, each test builds a project and runs pytest on it in
this process (``tests/harness/inner_pytest.py``). A ``conftest.py`` prints the settings the plugin resolved in the report header
(``SETTINGS {...}``), so precedence is read from what the plugin will use, not guessed from its effects.
Nothing here runs a scenario: collection, the header and startup errors are enough, and stay fast.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import build_parser
from tests.harness.inner_pytest import InnerProject

REPO = Path(__file__).resolve().parents[2]
SINGLE = (REPO / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")
PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
asyncio_default_fixture_loop_scope = "function"
filterwarnings = ["ignore::DeprecationWarning"]

[tool.rlm-conformance]
scenarios = "conformance/scenarios"
"""
DUMP = """\
import json


def pytest_report_header(config):
    from harness.pytest_plugin import SESSION

    o = config.stash[SESSION].options
    root = config.rootpath

    def rel(path):
        return None if path is None else str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    return "SETTINGS " + json.dumps({
        "target": o.target, "session_service": o.session_service, "llm_mode": o.llm_mode.value,
        "backend": o.backend, "scenarios": [rel(p) for p in o.scenarios], "cassettes": rel(o.cassette_dir),
        "snapshots": rel(o.snapshot_dir), "profile": rel(o.profile_path)})
"""
CONFORMANCE_TEST = """\
from harness.pytest_plugin import assert_conforms


def test_scenario(rlm_scenario_result, snapshot):
    assert_conforms(rlm_scenario_result, snapshot)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    """A user's project: tests/ (testpaths) with one unit test, scenarios in conformance/scenarios/."""
    project = InnerProject.create(tmp_path, monkeypatch)
    project.write("pyproject.toml", PYPROJECT)
    project.write("conftest.py", DUMP)
    folder = project.mkdir("conformance/scenarios")
    (folder / "single_delegation.yaml").write_text(SINGLE, encoding="utf-8")
    project.write("tests/test_unit.py", "def test_unit():\n    pass\n")
    return project


def run(project: InnerProject, *args: str) -> pytest.RunResult:
    return project.run(*args)


def settings(result: pytest.RunResult) -> dict:
    line = next(line for line in result.stdout.lines if line.startswith("SETTINGS "))
    return json.loads(line.removeprefix("SETTINGS "))


def set_table(project: InnerProject, table: str) -> None:
    text = PYPROJECT.split("[tool.rlm-conformance]")[0] + "[tool.rlm-conformance]\n" + table
    project.write("pyproject.toml", text)


# --- where settings come from ------------------------------------------------------------------------

def test_defaults_without_any_configuration(project: InnerProject) -> None:
    set_table(project, "")
    assert settings(run(project, "--collect-only")) == {
        "target": None, "session_service": "delta", "llm_mode": "replay", "backend": "local",
        "scenarios": ["scenarios"], "cassettes": "cassettes", "snapshots": "snapshots", "profile": None}


def test_pyproject_table_is_honoured_with_paths_relative_to_it(project: InnerProject) -> None:
    (project.path / "profile.yaml").write_text("analyst: my_analyst\n", encoding="utf-8")
    set_table(project, 'target = "legacy"\nprofile = "profile.yaml"\nscenarios = ["conformance/scenarios"]\n'
                       'cassettes = "conformance/cassettes"\nsnapshots = "conformance/snapshots"\n'
                       'llm-mode = "scripted"\nsession_service = "adk-memory"\n')
    result = run(project, "--collect-only")
    assert settings(result) == {
        "target": "legacy", "session_service": "adk-memory", "llm_mode": "scripted", "backend": "local",
        "scenarios": ["conformance/scenarios"], "cassettes": "conformance/cassettes",
        "snapshots": "conformance/snapshots", "profile": "profile.yaml"}


def test_ini_options_are_honoured(project: InnerProject) -> None:
    set_table(project, "")
    (project.path / "other").mkdir()
    (project.path / "other" / "single_delegation.yaml").write_text(SINGLE, encoding="utf-8")
    (project.path / "profile.yaml").write_text("{}\n", encoding="utf-8")
    project.write("pytest.ini", "[pytest]\ntestpaths = tests\nasyncio_default_fixture_loop_scope = function\n"
                    "rlm_target = legacy\nrlm_profile = profile.yaml\nrlm_scenarios = other\n"
                    "rlm_llm_mode = scripted\nrlm_session_service = adk-memory\nrlm_cassette_dir = tapes\n"
                    "rlm_snapshot_dir = snaps\nrlm_backend = local\n")
    result = run(project, "--collect-only")
    assert settings(result) == {
        "target": "legacy", "session_service": "adk-memory", "llm_mode": "scripted", "backend": "local",
        "scenarios": ["other"], "cassettes": "tapes", "snapshots": "snaps", "profile": "profile.yaml"}
    result.stdout.fnmatch_lines(["  <Dir other>", "    <ScenarioFile single_delegation.yaml>"])


def test_flag_beats_ini_beats_pyproject_beats_default(project: InnerProject) -> None:
    set_table(project, 'target = "legacy"\nllm-mode = "live"\nsession-service = "adk-memory"\n'
                       'scenarios = "conformance/scenarios"\n')
    project.write("pytest.ini", "[pytest]\ntestpaths = tests\nasyncio_default_fixture_loop_scope = function\n"
                    "rlm_llm_mode = scripted\nrlm_target = legacy\n")
    got = settings(run(project, "--collect-only", "--target", "reference"))
    assert (got["target"], got["llm_mode"], got["session_service"], got["cassettes"]) == (
        "reference", "scripted", "adk-memory", "cassettes")  # flag, ini, pyproject, default


@pytest.mark.parametrize(("origin", "is_default"), [
    ("[tool.rlm-conformance] profile in /p/pyproject.toml", True), ("ini option rlm_profile in /p/pytest.ini", True),
    ("--profile", False)])
def test_the_projects_profile_yields_to_a_scenarios_own_and_the_flags_does_not(origin: str, is_default: bool) -> None:
    """The profile from the table or the ini file is the project's default: a scenario's own ``profile:`` beats it
    (choose_target, as the CLI does: test_project_config.py runs that end to end); ``--profile`` beats the scenario."""
    from harness.llm.modes import LlmMode
    from harness.pytest_plugin.options import PluginOptions
    from harness.scenario.loader import load_scenario
    from harness.targets.choice import choose_target
    from harness.targets.profile import TargetProfile

    options = PluginOptions(target=None, session_service="delta", llm_mode=LlmMode.REPLAY, record_mode="none",
                            scenarios=(), cassette_dir=Path("cassettes"), profile_path=Path("default.yaml"),
                            origins={"profile": origin})
    assert options.profile_is_default is is_default
    scenario = load_scenario(Path(__file__).resolve().parents[1] / "user_agents" / "agent_tool_rlm" / "scenarios"
                             / "coder_then_run.yaml")
    choice = choose_target(scenario, profile=TargetProfile(name="project_default", target="pkg.agent:app"),
                           profile_is_default=options.profile_is_default)
    assert choice.name == ("agent_tool_rlm" if is_default else "project_default")


def test_record_mode_turns_a_configured_replay_into_scripted(project: InnerProject) -> None:
    set_table(project, 'llm-mode = "replay"\nscenarios = "conformance/scenarios"\n')
    assert settings(run(project, "--collect-only", "--record-mode", "once"))["llm_mode"] == "scripted"
    refused = run(project, "--collect-only", "--record-mode", "once", "--llm-mode", "replay")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR


# --- collection ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_configured_scenarios_are_collected_outside_testpaths(project: InnerProject) -> None:
    result = run(project, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/test_unit.py::test_unit",
                                 "conformance/scenarios/single_delegation.yaml::scenario[[]single_delegation[]]",
                                 "2 tests collected*"])
    # Explicit paths are obeyed as given.
    explicit = run(project, "--collect-only", "-q", "tests")
    explicit.stdout.fnmatch_lines(["1 test collected*"])
    # Without the table, the default scenarios/ folder is not added (it may be another tool's).
    set_table(project, "")
    (project.path / "scenarios").mkdir()
    (project.path / "scenarios" / "single_delegation.yaml").write_text(SINGLE, encoding="utf-8")
    run(project, "--collect-only", "-q").stdout.fnmatch_lines(["1 test collected*"])


def test_a_test_asking_for_rlm_scenario_runs_them_once(project: InnerProject) -> None:
    (project.path / "tests" / "test_conformance.py").write_text(CONFORMANCE_TEST, encoding="utf-8")
    bare = run(project, "--collect-only", "-q")
    bare.stdout.fnmatch_lines(["tests/test_conformance.py::test_scenario[[]single_delegation[]]",
                               "2/3 tests collected (1 deselected)*"])
    assert "scenario[single_delegation]" not in bare.stdout.str().replace("test_scenario[", "")
    both = run(project, "--collect-only", "-q", "tests", "conformance/scenarios")  # asked for both: both run
    both.stdout.fnmatch_lines(["3 tests collected*"])


SCENARIO_ITEM = re.compile(r"(?:^|::)(?:test_)?scenario\[(\w+)\]$")


def collected_scenarios(ids: list[str]) -> list[str]:
    """The scenario name of each collected item that runs one (``test_scenario[NAME]``, ``scenario[NAME]``)."""
    return sorted(m.group(1) for m in map(SCENARIO_ITEM.search, ids) if m)


@pytest.mark.slow
def test_this_repository_runs_each_scenario_once(request: pytest.FixtureRequest) -> None:
    names = sorted(p.stem for p in (REPO / "scenarios").glob("*.yaml"))
    # This session's own collection, when it took in every scenario (a whole-repository run, as tox's): no second
    # collection of ~1,700 items. A narrower run (this file alone, -k ...) collects the repository again.
    ids = [item.nodeid for item in request.session.items]
    if set(collected_scenarios(ids)) != set(names):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        env.pop("PYTEST_ADDOPTS", None)
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert collected_scenarios(ids) == names  # each scenario exactly once


# --- configuration errors, at startup ----------------------------------------------------------------

@pytest.mark.parametrize(("args", "table", "message"), [
    (("--session-service", "bogus"), "", "*rlm-conformance: --session-service: --session-service 'bogus' is unknown*"),
    (("--target", "nosuch"), "", "*rlm-conformance: --target: --target 'nosuch' is not a known target*"),
    ((), 'target = "no_such_module:app"\n',
     "*[[]tool.rlm-conformance[]] target in *pyproject.toml: --target 'no_such_module:app': importing module*"),
    ((), 'profile = "profile.yaml"\n',
     "*[[]tool.rlm-conformance[]] profile in *pyproject.toml: *profile.yaml:1: field 'analist': unknown field. "
     "Fix: did you mean 'analyst'?*"),
    (("--scenarios-dir", "nowhere"), "", "*--scenarios-dir: no such scenario folder or file: *nowhere*"),
    ((), 'scenario = "conformance/scenarios"\n',
     "*pyproject.toml: invalid [[]tool.rlm-conformance[]]: unknown key 'scenario' (did you mean 'scenarios'?)*"),
    ((), 'llm-mode = "replya"\n', "*key 'llm-mode': 'replya' is not one of replay, scripted, live (did you mean*"),
], ids=["session-service", "target", "pyproject-target", "profile", "scenarios", "unknown-key", "bad-value"])
def test_a_bad_configuration_stops_pytest_at_startup(project: InnerProject, args: tuple[str, ...], table: str,
                                                       message: str) -> None:
    (project.path / "profile.yaml").write_text("analist: typo\n", encoding="utf-8")
    if table:
        set_table(project, table)
    result = run(project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str() and "collected" not in result.stdout.str()


def test_a_bad_ini_value_names_the_ini_option(project: InnerProject) -> None:
    project.write("pytest.ini", "[pytest]\ntestpaths = tests\nasyncio_default_fixture_loop_scope = function\n"
                                "rlm_llm_mode = replya\n")
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option rlm_llm_mode in *pytest.ini: 'replya' is not one of replay, scripted, live*"])


# --- network -----------------------------------------------------------------------------------------

NETWORK_TESTS = """\
import socket


def test_reaches_out(rlm_scenario):
    socket.create_connection(("example.com", 443), timeout=1)


def test_loopback_is_fine(rlm_scenario):
    with socket.create_server(("127.0.0.1", 0)) as server:
        socket.create_connection(server.getsockname(), timeout=1).close()


def test_other_tests_are_left_alone():
    assert socket.getaddrinfo.__name__ == "getaddrinfo"
"""


def test_replay_blocks_the_network_of_scenario_tests_naming_the_host(project: InnerProject) -> None:
    (project.path / "tests" / "test_network.py").write_text(NETWORK_TESTS, encoding="utf-8")
    result = run(project, "tests/test_network.py")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*NetworkBlockedError: Network access blocked: *example.com:443*",
                                 "FAILED tests/test_network.py::test_reaches_out*"])


def test_replay_blocks_the_network_during_collection(project: InnerProject) -> None:
    (project.path / "tests" / "test_at_import.py").write_text(
        'import socket\n\nsocket.getaddrinfo("example.com", 443)\n', encoding="utf-8")
    result = run(project, "--collect-only", "tests/test_at_import.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*NetworkBlockedError: Network access blocked: *example.com:443*"])


# --- the CLI and the plugin speak the same options ----------------------------------------------------

CLI_ONLY = {
    "--scenario": "pytest selects by node id and -k",
    "--no-progress": "pytest has its own progress output",
    "--jobs": "pytest runs items in parallel with pytest-xdist (-n N)", "-j": "same",
    "--reports-dir": "pytest writes reports with --junitxml and the report plugin",
    "--format": "same",
    "--databricks-live": "the databricks backend's live workspace is a CLI recording step",
    "--allow-script-misfit": "record-only escape hatch for deliberately broken targets",
    "--accept": "record's review step (cassettes.new/ into place); the plugin's --record-mode writes in place",
    "--wide": "the console matrix; pytest reports each scenario × check as its own item",
    "--write-baseline": "the CLI writes the baseline file (run --write-baseline); pytest reads it (--baseline)",
    "--help": "", "-h": "",
}
PLUGIN_ONLY = {
    "--rlm-explore": "the CLI's equivalent is the explore command, not an option of run",
    "--rlm-explore-behaviours": "explore's --behaviours, for --rlm-explore",
    "--rlm-crash": "the CLI's equivalent is the crash command (its --points), not an option of run",
    "--rlm-crash-recovery": "crash's --recovery, for --rlm-crash",
    "--rlm-crash-max-points": "crash's --max-points, for --rlm-crash",
    "--rlm-crash-jobs": "crash's -j, for --rlm-crash (pytest's own -n spreads the items)",
}


def _cli_options() -> set[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # noqa: SLF001 (argparse's own)
    return {s for name in ("run", "record") for a in commands[name]._actions for s in a.option_strings}  # noqa: SLF001


def test_cli_and_plugin_option_names_match(project: InnerProject) -> None:
    help_text = run(project, "--help").stdout.str()
    section = help_text.split("rlm-conformance: run scenarios against an RLM agent:")[1].split("\n\n")[0]
    plugin = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", section))
    short = {o for o in plugin if not o.startswith("--rlm-")}
    twins = {o for o in plugin if o.startswith("--rlm-")} - set(PLUGIN_ONLY)
    assert twins == {"--rlm-" + o.removeprefix("--") for o in short}
    assert set(PLUGIN_ONLY) <= plugin, "a PLUGIN_ONLY option the plugin no longer has: drop it from PLUGIN_ONLY"
    cli = _cli_options()
    assert short - {"--record-mode"} <= cli, f"plugin options the CLI lacks: {short - cli}"
    shared = cli - set(CLI_ONLY) - {"-k", "--log-level", "--snapshot-update"}  # pytest's and syrupy's own
    assert shared <= short, f"CLI options pytest lacks (add them, or to CLI_ONLY with a reason): {shared - short}"
    for ini in ("rlm_target", "rlm_profile", "rlm_scenarios", "rlm_llm_mode", "rlm_session_service",
                "rlm_cassette_dir", "rlm_snapshot_dir", "rlm_backend"):
        assert re.search(rf"^\s+{ini} \(", help_text, re.M), ini
