"""``explore`` on ADK's code-executor shape, from init's draft with no line added: the analyst's delegations are
its answers in its executor's own code_block_delimiters (read from the agent's executor), so generated
conversations execute code; the planted defects of tests/user_agents/code_executor_rlm are found by the checks
that own them, the direct mutation shrinks to the agent's own key (never ADK's), and the correct agent gives no
finding but the true one of its unconfined executor (UnsafeLocalCodeExecutor runs code as a plain subprocess).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.explore.library import load_library
from harness.explore.plan import StepPlan, analyst_step
from harness.explore.target_model import describe_target
from harness.init.project import init_project
from harness.targets.profile import load_profile

AGENT = "tests.user_agents.code_executor_rlm.agent"
JUDGED = ("no_unpersisted_mutation", "stage_gating", "minimal_deltas", "no_temp_persisted", "summary_persisted",
          "artifacts_consumed", "processor_model_runs", "none_deletes", "stale_flags_cleared")


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    init_project(f"{AGENT}:app", tmp_path / "draft")
    return tmp_path / "draft" / "rlm-profile.yaml"


def explore(tmp_path: Path, profile: Path, target: str, *checks: str) -> int:
    flags = [arg for check in checks for arg in ("--check", check)]
    return main(["explore", "--seed", "0", "--no-database", "--no-progress", "--fail-on-find", "-j", "1",
                 "--max-examples", "10", "--shrink-runs", "10", "--out", str(tmp_path / "found"),
                 "--profile", str(profile), "--target", f"{AGENT}:{target}", *flags])


def found(tmp_path: Path) -> dict[str, str]:
    out = {}
    for path in sorted((tmp_path / "found").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        out[text.splitlines()[0].rsplit("fails the check ", 1)[1].rstrip(".")] = text
    return out


def test_a_delegation_is_code_in_the_executors_own_delimiters(draft: Path) -> None:
    model = describe_target(f"{AGENT}:app", load_profile(draft))
    assert model.delegates and model.code_delimiters == ("```python\n", "\n```") and not model.model_side
    library = load_library()
    step = analyst_step(StepPlan(kind="delegate", behaviour=library.behaviours[0].name), model, library)
    assert step["text"].startswith("```python\n") and step["text"].endswith("\n```")
    builtin = describe_target("tests.user_agents.code_executor_rlm.other_executors:builtin_app", load_profile(draft))
    answer = analyst_step(StepPlan(kind="delegate", behaviour=library.behaviours[0].name), builtin, library)
    parts = answer["response"]["candidates"][0]["content"]["parts"]
    assert [next(iter(p)) for p in parts] == ["executableCode", "codeExecutionResult"]


@pytest.mark.slow
def test_the_direct_mutation_is_found_and_shrinks_to_the_agents_key(tmp_path: Path, draft: Path) -> None:
    assert explore(tmp_path, draft, "direct_mutation", "no_unpersisted_mutation") == 1
    text = found(tmp_path)["no_unpersisted_mutation"]
    evidence = next(line for line in text.splitlines() if line.startswith("#   evidence: "))
    assert "'user:last_output'" in evidence and "'_code_exec" not in evidence
    assert "```python" in yaml.safe_load(text)["script"]["analyst"][0]["text"]


@pytest.mark.slow
def test_the_stale_re_digest_is_found_by_stage_gating(tmp_path: Path, draft: Path) -> None:
    assert explore(tmp_path, draft, "stale_redigest", "stage_gating") == 1
    evidence = found(tmp_path)["stage_gating"].splitlines()[1]
    assert "(author digest" in evidence and "without a new execution" in evidence


@pytest.mark.slow
def test_the_correct_agent_gives_no_finding(tmp_path: Path, draft: Path) -> None:
    assert explore(tmp_path, draft, "app", *JUDGED) == 0
    assert not found(tmp_path)
