"""Scenario files: the good one loads; every class of mistake gives a file:line:field message with a fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.scenario import loader as loader_module
from harness.scenario.loader import ScenarioError, load_scenario, load_scenarios, parse_scenario
from harness.scenario.models import Scenario
from harness.scenario.schema import REGENERATE, SCHEMA_PATH, render_json_schema, scenario_json_schema
from harness.scenario.script import CallStep, TextStep

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "scenarios" / "single_delegation.yaml"
GOOD = EXAMPLE.read_text(encoding="utf-8")
LINE = re.compile(r"^\S+?:\d+(:\d+)?: (field '[^']+': )?.+\. Fix: .+$")


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_for(tmp_path: Path, text: str, name: str = "single_delegation.yaml") -> ScenarioError:
    path = write(tmp_path, name, text)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "Traceback" not in message
    for line in message.splitlines():
        assert line.startswith(f"{path}:"), line
        assert LINE.match(line), line
    return caught.value


def test_example_scenario_loads() -> None:
    scenario = load_scenario(EXAMPLE)
    assert scenario.name == "single_delegation"
    assert scenario.target is None and scenario.profile is None and scenario.max_iterations is None
    assert scenario.context == {"sales": [{"region": "north", "amount": 120}, {"region": "south", "amount": 80}]}
    assert scenario.sessions[0].user == "analyst_1" and scenario.sessions[0].id is None
    delegate, exit_call = scenario.script["databricks_analyst"]
    assert isinstance(delegate, CallStep) and delegate.call == "delegate_code_results"
    assert "sum(r['amount']" in delegate.args["code"] and "\n" in delegate.args["code"]
    assert exit_call == CallStep(call="exit_loop")
    assert scenario.script["results_processor"] == [TextStep(text="The total sales amount is 200.")]
    assert scenario.expect.executions == 1 and scenario.expect.termination == "exit_loop"
    assert scenario.expect.state["rlm:iteration"] == 1
    assert GOOD.startswith("# yaml-language-server: $schema=./scenario.schema.json\n")


def test_shipped_scenarios_load_sorted_by_name() -> None:
    scenarios = load_scenarios(REPO / "scenarios")
    assert "single_delegation" in [s.name for s in scenarios]
    assert [s.name for s in scenarios] == sorted(s.name for s in scenarios)


def test_unknown_top_level_field_lists_allowed_fields_and_suggests(tmp_path: Path) -> None:
    error = error_for(tmp_path, GOOD.replace("\ntags:", "\ntagz:"))
    assert str(error) == (
        f"{tmp_path / 'single_delegation.yaml'}:4: field 'tagz': unknown field 'tagz' (allowed here: name, "
        "description, target, profile, max_iterations, limits, executor, context, clock_start, escape_probe, sessions, "
        "script, expect, tags, crash, concurrent), got "
        "['smoke', 'delegation', 'crash']. Fix: did you mean 'tags'? Rename it")
    assert (error.line, error.field, error.path) == (4, "tagz", str(tmp_path / "single_delegation.yaml"))
    assert isinstance(error, HarnessError)


def test_wrong_type_deep_in_a_list(tmp_path: Path) -> None:
    text = GOOD.replace("      - user: What is the total sales amount?\n",
                        "      - user: What is the total sales amount?\n      - user: 5\n")
    error = error_for(tmp_path, text)
    assert (error.line, error.field) == (10, "sessions[0].turns[1].user")
    assert ":10: field 'sessions[0].turns[1].user': expected a string, got 5. Fix: quote the value" in str(error)


def test_step_with_two_shapes(tmp_path: Path) -> None:
    error = error_for(tmp_path, GOOD.replace("    - call: exit_loop\n", "    - {call: exit_loop, fault: http_429}\n"))
    assert (error.line, error.field) == (16, "script.databricks_analyst[1]")
    assert "has both 'call' and 'fault', got {call: 'exit_loop', fault: 'http_429'}" in str(error)
    assert "Fix: write one step per list item" in str(error)


@pytest.mark.parametrize(("step", "expected"), [
    ("- exit_loop", "a step must be a mapping"),
    ("- {}", "a step needs 'call', 'fault', 'text' or 'response'"),
    ("- {fault: http_492}", "expected one of http_429, http_500, http_503, malformed, truncated, slow, empty, "
                            "safety, got 'http_492'. Fix: did you mean 'http_429'?"),
    ("- {text: hi, args: {}}", "unknown field 'args' (allowed here: text, delay, when)"),
    ("- {call: exit_loop, argz: {}}", "unknown field 'argz' (allowed here: call, args, text, delay), got {}. "
                                      "Fix: did you mean 'args'?"),
])
def test_bad_steps(tmp_path: Path, step: str, expected: str) -> None:
    error = error_for(tmp_path, GOOD.replace("- call: exit_loop", step))
    assert error.line == 16 and error.field is not None and error.field.startswith("script.databricks_analyst[1]")
    assert expected in str(error)


def test_bad_yaml_syntax_gives_line_and_column(tmp_path: Path) -> None:
    error = error_for(tmp_path, GOOD.replace("  executions: 1", " executions: 1"))
    path = tmp_path / "single_delegation.yaml"
    assert str(error) == (f"{path}:21:14: invalid YAML: mapping values are not allowed here. Fix: quote a value "
                          "that contains ': ', or fix the indentation of the line")
    assert (error.line, error.field) == (21, None)


@pytest.mark.parametrize(("text", "expected"), [
    ("name: x\n\tdescription: y\n", ":2:1: invalid YAML: found character '\\t' that cannot start any token. "
                                    "Fix: indent with spaces, not tabs"),
    ("name: a\nname: b\n", ":2:1: invalid YAML: found duplicate key 'name' (first at line 1)"),
    ("name: x\ndescription: 2001-02-30\n", ":2:14: invalid YAML: cannot read the value '2001-02-30' (day is out of range for month). Fix: quote the value"),
    ("a: 1\n---\nb: 2\n", ":2:1: invalid YAML: expected a single document in the stream, but found another document"),
    ("name: [x\n", "invalid YAML:"),
])
def test_other_yaml_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in str(error_for(tmp_path, text))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "null\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    error = error_for(tmp_path, text)
    assert "the file holds no scenario (it is empty or only comments)" in str(error)
    assert error.line == 1


@pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "got a list"), ("just text\n", "got a single value")])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    assert f"the top level must be a mapping of scenario fields (name: ..., description: ..., sessions: ..., " \
           f"script: ...), {kind}" in str(error_for(tmp_path, text))


def test_name_must_equal_file_stem(tmp_path: Path) -> None:
    error = error_for(tmp_path, GOOD, name="other.yaml")
    assert str(error) == (f"{tmp_path / 'other.yaml'}:2: field 'name': expected the file stem 'other', got "
                          "'single_delegation'. Fix: set 'name: other' or rename the file to single_delegation.yaml")


def test_every_error_of_a_file_is_reported_in_line_order(tmp_path: Path) -> None:
    text = (GOOD.replace("sessions:\n  - user: analyst_1\n    turns:\n      - user: What is the total sales amount?\n",
                         "sessions: []\n")
            .replace("  results_processor:", "  results-processor:")
            .replace("executions: 1", "executions: -1"))
    error = error_for(tmp_path, text + "max_iteration: 0\n")
    fields = [re.search(r"field '([^']+)'", line).group(1) for line in str(error).splitlines()]
    assert fields == ["sessions", 'script["results-processor"]', "expect.executions", "max_iteration"]
    assert "did you mean 'max_iterations'?" in str(error)
    assert "use the agent's name (a Python identifier) or 'sub_lm'" in str(error)
    assert error.field == "sessions" and error.line == 6


def test_missing_required_fields_name_the_field_and_its_purpose(tmp_path: Path) -> None:
    error = error_for(tmp_path, "name: single_delegation\nsessions:\n  - user: u\n")
    assert str(error).splitlines() == [
        f"{tmp_path / 'single_delegation.yaml'}:1: field 'description': required field is missing. Fix: add "
        "'description:' ('description': What the scenario exercises, in one sentence.)",
        f"{tmp_path / 'single_delegation.yaml'}:1: field 'script': required field is missing. Fix: add 'script:' "
        "('script': Model script: agent name (or 'sub_lm' for llm_query calls) -> its answers, in order.)",
        f"{tmp_path / 'single_delegation.yaml'}:3: field 'sessions[0].turns': required field is missing. Fix: add "
        "'turns:' ('turns': The user turns of this session, in order.)",
    ]


def test_non_json_values_and_keys(tmp_path: Path) -> None:
    text = GOOD.replace("{region: north", "{region: 2020-01-01").replace("    turns:", "    initial_state: {1: x}\n"
                                                                                     "    turns:")
    message = str(error_for(tmp_path, text))
    assert "field 'context.sales[0].region': expected a JSON value" in message
    assert "Fix: quote it, e.g. \"2020-01-01\"" in message
    assert ":8: field 'sessions[0].initial_state[1]': expected a text key, got 1" in message


def test_check_selection_and_target(tmp_path: Path) -> None:
    text = GOOD + "  checks: {only: [a], skip: {a: not relevant}}\ntarget: my module\n"
    message = str(error_for(tmp_path, text))
    assert "field 'expect.checks': a check cannot be both in 'only' and in 'skip': a" in message
    assert "field 'target': expected text matching" in message and "'package.module:attribute'" in message


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"cannot read the file .*Fix: check the path"):
        load_scenario(tmp_path / "missing.yaml")
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match="not UTF-8 text"):
        load_scenario(tmp_path / "latin1.yaml")
    with pytest.raises(ScenarioError, match="is not a directory"):
        load_scenarios(tmp_path / "nowhere")


def test_duplicate_names_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a/single_delegation.yaml", GOOD)
    second = write(tmp_path, "b/single_delegation.yml", GOOD)
    with pytest.raises(ScenarioError) as caught:
        load_scenarios(tmp_path)
    assert str(caught.value) == (f"{second}:2: field 'name': duplicate scenario name 'single_delegation', also in "
                                 f"{first}:2. Fix: rename one of the two files and its 'name'")


def test_load_scenarios_reports_every_bad_file_and_sorts(tmp_path: Path) -> None:
    write(tmp_path, "zeta.yaml", GOOD.replace("name: single_delegation", "name: zeta"))
    write(tmp_path, "alpha.yaml", GOOD.replace("name: single_delegation", "name: alpha"))
    assert [s.name for s in load_scenarios(tmp_path)] == ["alpha", "zeta"]
    write(tmp_path, "bad1.yaml", "")
    write(tmp_path, "bad2.yaml", "name: [")
    with pytest.raises(ScenarioError) as caught:
        load_scenarios(tmp_path)
    assert [p.path for p in caught.value.problems] == [str(tmp_path / "bad1.yaml"), str(tmp_path / "bad2.yaml")]


def test_parse_scenario_without_a_file() -> None:
    assert isinstance(parse_scenario(GOOD), Scenario)
    with pytest.raises(ScenarioError, match="^<scenario>:2: field 'name': expected the file stem 'x'"):
        parse_scenario(GOOD, stem="x")


def test_committed_json_schema_is_current() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
    assert committed == render_json_schema(), (
        f"{SCHEMA_PATH.relative_to(REPO)} is out of date with harness/scenario/models.py. "
        f"Fix: run `{REGENERATE}` and commit the result")


def test_json_schema_is_strict_and_documented() -> None:
    schema = scenario_json_schema()
    assert json.loads(render_json_schema()) == schema
    for definition in [schema, *schema["$defs"].values()]:
        if definition.get("type") != "object":
            continue
        assert definition["additionalProperties"] is False, definition["title"]
        for name, field in definition["properties"].items():
            assert field.get("description"), f"{definition['title']}.{name} has no description"


# --- libyaml fast path (harness/scenario/loader.py: _FastLoader) -------------------------------------------------

needs_libyaml = pytest.mark.skipif(loader_module._FastLoader is None, reason="PyYAML without libyaml")


@needs_libyaml
@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_libyaml_and_the_pure_python_parser_read_every_shipped_scenario_alike(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast, slow = loader_module._FastLoader(text), loader_module._Loader(text)
    try:
        fast_node, slow_node = fast.get_single_node(), slow.get_single_node()
        assert fast.construct_document(fast_node) == slow.construct_document(slow_node)
        assert loader_module._line_of(fast_node, ["script"]) == loader_module._line_of(slow_node, ["script"])
    finally:
        fast.dispose()
        slow.dispose()


@needs_libyaml
@pytest.mark.parametrize(("text", "expected"), [
    # libyaml alone accepts a tab after "key:"; a file must load, or not, the same without libyaml.
    ("name:\tx\n", ":1:6: invalid YAML: found character '\\t' that cannot start any token"),
    ("name: x\n\tdescription: y\n", ":2:1: invalid YAML: found character '\\t'"),
    ("name: a\nname: b\n", ":2:1: invalid YAML: found duplicate key 'name' (first at line 1)"),
    ("name: [x\n", "invalid YAML:"),
    ("name: b\x07c\n", ":1: invalid YAML: unreadable character 7"),
    ("name: \ud800\n", ":1: invalid YAML: unreadable character 55296"),
])
def test_a_file_libyaml_refuses_gets_the_pure_python_message(tmp_path: Path, text: str, expected: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.yaml"
    with_libyaml = _yaml_error(text, path)
    monkeypatch.setattr(loader_module, "_FastLoader", None)
    assert with_libyaml == _yaml_error(text, path)
    assert expected in with_libyaml


def _yaml_error(text: str, path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        loader_module._parse_yaml(text, str(path))
    return str(caught.value)
