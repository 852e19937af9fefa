"""``init`` on agents whose code runs through ADK's own code executor (``LlmAgent(code_executor=...)``).

tests/user_agents/code_executor_rlm: the analyst answers in ```python blocks that ADK's UnsafeLocalCodeExecutor
runs; a BaseAgent digests each result. Before, init drafted ``job_builder: digest`` (it did not look at
``code_executor``) and its own smoke scenario failed the correct agent on ADK's ``_code_execution_context``. Now
the draft names the shape, the smoke runs one code block in the executor's own delimiters, and it is green —
on a model-side executor and a home-made one with delimiters of its own too (recognised by type, not name).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.init.project import init_project
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.targets.profile import load_profile

AGENT = "tests.user_agents.code_executor_rlm.agent"
OTHERS = "tests.user_agents.code_executor_rlm.other_executors"


def smoke(directory: Path, target: str):
    profile = load_profile(directory / "rlm-profile.yaml")
    return run_scenario(load_scenario(directory / "scenarios" / "smoke.yaml"),
                        RunOptions(llm_mode=LlmMode.SCRIPTED, target=target, profile=profile))


def verdicts(result) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status.value, c.explanation + "\n" + "\n".join(c.evidence)) for c in result.checks}


def test_init_drafts_the_code_executor_shape_and_its_smoke_is_green(tmp_path: Path) -> None:
    init_project(f"{AGENT}:app", tmp_path)
    profile = load_profile(tmp_path / "rlm-profile.yaml")
    assert (profile.analyst, profile.code_executor, profile.results_processor) == ("analyst", "analyst", "digest")
    assert profile.job_builder is None and profile.delegation_key is None and profile.delegate_tool is None
    text = (tmp_path / "rlm-profile.yaml").read_text(encoding="utf-8")
    assert "code_executor: analyst  # inferred: analyst's code_executor is UnsafeLocalCodeExecutor" in text
    smoke_text = (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    assert '- text: "```python\\nprint(\\"smoke\\")\\n```"' in smoke_text
    result = smoke(tmp_path, f"{AGENT}:app")
    seen = verdicts(result)
    assert result.status == "pass", [v for v in seen.items() if v[1][0] == "fail"]
    assert "1 fresh delegation(s), 1 execution(s), 1 digest run(s)" in seen["stage_gating"][1]
    assert seen["no_unpersisted_mutation"][0] == "pass"
    assert "without an event" in seen["no_unpersisted_mutation"][1]
    assert seen["processor_model_runs"][0] == "n/a"


def test_the_smoke_of_a_directly_mutating_digest_fails_on_the_agents_key_only(tmp_path: Path) -> None:
    init_project(f"{AGENT}:app", tmp_path)
    result = smoke(tmp_path, f"{AGENT}:direct_mutation")
    [mutation] = [c for c in result.checks if c.name == "no_unpersisted_mutation"]
    assert mutation.status.value == "fail" and mutation.evidence
    assert all("'user:last_output'" in line and "_code_exec" not in line for line in mutation.evidence)
    assert [c.name for c in result.checks if c.status.value == "fail"] == ["no_unpersisted_mutation"]


@pytest.mark.parametrize(("attr", "executor", "step"), [
    ("builtin_app", "BuiltInCodeExecutor", '"executableCode"'),
    ("custom_app", "TagRunner", '- text: "<run>\\nprint(\\"smoke\\")\\n</run>"'),
])
def test_any_base_code_executor_is_recognised_and_scripted_in_its_own_terms(tmp_path: Path, attr: str,
                                                                             executor: str, step: str) -> None:
    init_project(f"{OTHERS}:{attr}", tmp_path)
    assert load_profile(tmp_path / "rlm-profile.yaml").code_executor == "analyst"
    assert f"code_executor is {executor}" in (tmp_path / "rlm-profile.yaml").read_text(encoding="utf-8")
    assert step in (tmp_path / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    result = smoke(tmp_path, f"{OTHERS}:{attr}")
    seen = verdicts(result)
    assert result.status == "pass", [v for v in seen.items() if v[1][0] == "fail"]
    assert "1 fresh delegation(s), 1 execution(s)" in seen["stage_gating"][1]


def test_an_agent_without_a_code_executor_says_the_line_is_not_needed(tmp_path: Path) -> None:
    init_project("tests.user_agents.tool_rlm.agent:app", tmp_path)
    text = (tmp_path / "rlm-profile.yaml").read_text(encoding="utf-8")
    assert "code_executor: null  # not needed: no LlmAgent of the tree has an ADK code_executor" in text
