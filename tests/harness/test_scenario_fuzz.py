"""Property: whatever text a scenario file holds, loading it gives a Scenario or a ScenarioError — never
another exception, and the error always reads '<file>:<line>...: ... Fix: ...'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario
from harness.scenario.models import Scenario

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GOOD = (REPO / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")
PATH = "scenarios/fuzz.yaml"
LINE = re.compile(r"^scenarios/fuzz\.yaml(:\d+(:\d+)?)?: (field '.+?': )?.+\. Fix: .+$")

FIELDS = ["name", "description", "target", "max_iterations", "context", "sessions", "script", "expect", "tags",
          "user", "id", "turns", "initial_state", "checks", "only", "skip", "executions", "final_answer",
          "termination", "state", "outcome_error", "state_budget_bytes", "call", "args", "text", "fault",
          "retry_after", "delay", "databricks_analyst", "sub_lm", "rlm:iteration"]
YAML_BITS = [":", ": ", "- ", "\n", "\n  ", "\t", "{", "}", "[", "]", ",", "'", '"', "#", "&a ", "*a", "!!str ",
             "!!python/object ", "<<: ", "---\n", "...\n", "? ", "|\n", ">\n", "%YAML 1.1\n", "\\", "\x00", "\ufeff",
             "2001-02-30", "0x1F", ".inf", "~", "null", "yes", "1e999", "é"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
                    st.sampled_from(FIELDS), st.dates())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=6), st.integers()), inner, max_size=5)),
    max_leaves=25)
structured = st.dictionaries(st.sampled_from(FIELDS), values, max_size=9).map(
    lambda data: yaml.safe_dump(data, allow_unicode=True, sort_keys=False))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """The good example with a few character- or line-level edits."""
    text = GOOD
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "line"]))
        if kind == "insert":
            text = text[:at] + draw(st.one_of(st.sampled_from(YAML_BITS), st.text(max_size=3))) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif kind == "replace":
            text = text[:at] + draw(st.sampled_from(FIELDS + YAML_BITS)) + text[at + draw(st.integers(1, 8)):]
        else:
            lines = text.splitlines(keepends=True)
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], " " * draw(st.integers(0, 3)) + lines[i]
            text = "".join(lines)
    return text


def check_outcome(text: str) -> None:
    try:
        scenario = parse_scenario(text, path=PATH, stem="single_delegation")
    except ScenarioError as error:
        message = str(error)
        assert message and "Traceback" not in message
        for line in message.splitlines():
            assert LINE.match(line), line
        assert error.path == PATH and error.problems
        assert error.line is None or error.line >= 1
    else:
        assert isinstance(scenario, Scenario)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), mutated(), structured,
                 st.lists(st.sampled_from(YAML_BITS + FIELDS), max_size=30).map("".join)))
def test_any_text_gives_a_scenario_or_a_scenario_error(text: str) -> None:
    check_outcome(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), mutated().map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_any_file_bytes_give_a_scenario_or_a_scenario_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "single_delegation.yaml"
    path.write_bytes(data)
    try:
        load_scenario(path)
    except ScenarioError as error:
        assert str(error).startswith(f"{path}") and "Fix:" in str(error)


@pytest.mark.parametrize("text", [GOOD, GOOD.replace("\n", "\r\n"), "\ufeff" + GOOD])
def test_good_example_survives_encoding_variants(text: str) -> None:
    assert parse_scenario(text, stem="single_delegation").name == "single_delegation"
