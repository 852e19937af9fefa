"""The pytest plugin's ``--rlm-explore N``: explore's findings as failing items, nothing when clean or without it.

Each test is ``pytest`` in a small project of its own, in this process (``tests/harness/inner_pytest.py``), against a
real target in scripted mode (loopback only). One example is enough: the broken target fails on the simplest
conversation, and the reference agent passes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.inner_pytest import InnerProject

INI = """\
[pytest]
testpaths = test_unit.py
asyncio_default_fixture_loop_scope = function
filterwarnings = ignore::DeprecationWarning
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    """A user's project: one passing unit test, no scenario."""
    project = InnerProject.create(tmp_path, monkeypatch)
    project.write("pytest.ini", INI)
    project.write("test_unit.py", "def test_unit():\n    pass\n")
    return project


def test_without_the_option_nothing_changes(project: InnerProject) -> None:
    result = project.run("-rA", "--target", "tests.broken_targets:analyst_fstring_prompt")
    result.assert_outcomes(passed=1)
    assert "explore" not in result.stdout.str()
    assert not (project.path / ".rlm-conformance").exists()


@pytest.mark.slow
def test_each_finding_is_a_failing_item_named_after_its_check(project: InnerProject) -> None:
    result = project.run("-rA", "--target", "tests.broken_targets:analyst_fstring_prompt", "--rlm-explore", "1")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    out = result.stdout.str()
    # pytest 9 appends " - <first line>" to the summary line, pytest 8 (the 1.x line's) does not.
    assert "FAILED explore::instructions_render" in out, out
    assert "explore found check instructions_render failing on target tests.broken_targets:analyst_fstring_prompt" \
        in out
    written = project.path / ".rlm-conformance" / "found"
    scenario = next(written.glob("*instructions_render.yaml"))
    assert f"Reproduce: rlm-conformance run --scenario {scenario.stem} --scenarios-dir {written}" in out
    assert "rlm-conformance explore tests.broken_targets:analyst_fstring_prompt (seed 0): " in out
    assert "; found instructions_render" in out


@pytest.mark.slow
def test_nothing_found_adds_no_item(project: InnerProject) -> None:
    result = project.run("-rA", "--target", "reference", "--rlm-explore", "1")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert "rlm-conformance explore reference (seed 0): 1 examples run" in result.stdout.str()
    assert "found nothing" in result.stdout.str()


def test_the_number_of_examples_must_be_positive(project: InnerProject) -> None:
    result = project.run("--rlm-explore", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "'0' is not a positive whole number of examples" in result.stderr.str()


PYTHON_FENCE_PROFILE = """\
name: output_key_rlm
target: tests.user_agents.output_key_rlm.agent:app
loop_agent: main_loop
analyst: analyst
delegation_key: pending_code
delegation_pattern: "```python"
job_builder: runner
results_processor: processor
summary_key: findings
"""


def test_a_behaviours_file_reaches_explore_from_pytest(project: InnerProject) -> None:
    """An agent whose code fence the default delegation_text does not match: explore's fix was "set delegation_text
    in a --behaviours file", which pytest had no way to pass (a newcomer's report). --rlm-explore-behaviours does."""
    project.write("rlm-profile.yaml", PYTHON_FENCE_PROFILE)
    project.write("behaviours.yaml", 'delegation_text: "```python\\n{code}\\n```"\nbehaviours: []\n')
    args = ("-rA", "--target", "tests.user_agents.output_key_rlm.agent:app", "--profile", "rlm-profile.yaml",
            "--rlm-explore", "1")
    refused = project.run(*args).stdout.str()
    assert "explore could not run" in refused and "--rlm-explore-behaviours FILE" in refused, refused
    ran = project.run(*args, "--rlm-explore-behaviours", "behaviours.yaml").stdout.str()
    assert "explore could not run" not in ran and "rlm-conformance explore tests.user_agents.output_key_rlm" in ran, ran
