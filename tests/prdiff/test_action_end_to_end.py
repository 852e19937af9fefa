"""The GitHub Action's script end to end on two commits of a fixture repository: an outside agent
(tests/user_agents/digest_rlm, copied) and then the same agent with a planted state defect (its digest no longer
deletes the output it digested, so it digests it again). The suite runs at both commits (the base in a git
worktree, as on a pull request), the diff names the defect's scenario, check and state key first, and the comment
goes to a local stub of GitHub's REST endpoints — posted once, then updated. Offline: the scripted model on
127.0.0.1 and the stub."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.prdiff.action import main as action_main
from harness.prdiff.github_comment import MARKER
from tests.prdiff.github_stub import TOKEN, github_stub

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "user_agents" / "digest_rlm"
# A turn in which the coder thinks an iteration over without delegating: a digest that left its input behind
# digests it again there (the stale trigger stage_gating catches).
THINKS = {"name": "digest_thinks", "profile": "../rlm-profile.yaml",
          "description": "The coder runs code, thinks an iteration over, exits: the digest runs once.",
          "sessions": [{"user": "u1", "turns": [{"user": "What is six times seven?"}]}],
          "script": {"coder": [{"call": "run_code", "args": {"code": "print(6 * 7)"}}, {"text": "Running it."},
                               {"text": "Thinking it over."}, {"call": "exit_loop"}]}}
DELETES = 'SUMMARY: digest, OUTPUT: None, f"artifact:'


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _fixture_repository(repo: Path) -> tuple[str, str]:
    """Commit 1: the agent, its scenarios and snapshots; commit 2: the planted defect. Returns both shas."""
    package = repo / "digest_agent"
    shutil.copytree(AGENT, package, ignore=shutil.ignore_patterns("__pycache__", "broken.py", "tests"))
    profile = package / "rlm-profile.yaml"
    profile.write_text(profile.read_text().replace("tests.user_agents.digest_rlm", "digest_agent"))
    (package / "scenarios" / "digest_thinks.yaml").write_text(yaml.safe_dump(THINKS, sort_keys=False))
    (repo / "pyproject.toml").write_text('[tool.rlm-conformance]\nscenarios = "digest_agent/scenarios"\n'
                                         'llm-mode = "scripted"\n')
    _git(repo, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, "-m", "harness", "run", "--snapshot-update", "--no-progress", "-j", "1",
                    "--reports-dir", str(repo.parent / "first")], cwd=repo, check=True, capture_output=True)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "digest agent")
    base = _git(repo, "rev-parse", "HEAD")
    agent = package / "agent.py"
    assert DELETES in agent.read_text()
    agent.write_text(agent.read_text().replace(DELETES, 'SUMMARY: digest, f"artifact:'))
    _git(repo, "commit", "-q", "-am", "digest: keep the output")
    return base, _git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
def test_the_action_comments_the_planted_defect_first_then_updates_its_comment(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    base_sha, _ = _fixture_repository(repo)
    (tmp_path / "runner").mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12, "base": {"sha": base_sha}}}))
    outputs = tmp_path / "outputs"
    with github_stub() as stub:
        env = {"GITHUB_WORKSPACE": str(repo), "RUNNER_TEMP": str(tmp_path / "runner"), "GITHUB_EVENT_PATH": str(event),
               "GITHUB_API_URL": stub.url, "GITHUB_REPOSITORY": "octo/digest", "GITHUB_OUTPUT": str(outputs),
               "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "INPUT_GITHUB_TOKEN": TOKEN,
               "INPUT_ARGS": "-j 1", "INPUT_REPORT_URL": "https://ci.example/42/conformance.html"}
        assert action_main(env) == 1  # a regression: the step fails

        [comment] = stub.comments[12]
        body = comment["body"]
        assert body.startswith(MARKER + "\n## rlm-conformance: what this change did\n")
        first = body.splitlines()[3]
        assert first.startswith("❌ **Regression** in `digest_thinks`: check `stage_gating` pass → fail; state key "
                                "`temp:output` no longer deleted by digest (turn 0, event 5)"), first
        assert len(body) < 65_536
        assert "[Full HTML report](https://ci.example/42/conformance.html)" in body
        assert "regressed=true" in outputs.read_text()
        assert (tmp_path / "summary.md").read_text() == body.removeprefix(MARKER + "\n")
        assert not (tmp_path / "runner" / "base-checkout").exists() and _git(repo, "worktree", "list").count("\n") == 0

        # A second run (the pull request pushed again; the base read from the stored report) updates the comment.
        [work] = (tmp_path / "runner").glob("rlm-conformance-action-*")
        env2 = {**env, "INPUT_BASE_REPORT": str(work / "base-reports"), "INPUT_FAIL_ON_REGRESSION": "false"}
        assert action_main(env2) == 0
    [again] = stub.comments[12]
    assert again["id"] == comment["id"] and again["body"].splitlines()[3] == first
    assert [m for m, _ in stub.calls] == ["GET", "POST", "GET", "PATCH"]


def test_action_yml_hands_every_input_to_the_script() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    install, run = action["runs"]["steps"]
    assert '-m pip install --quiet "${{ github.action_path }}"' in install["run"]
    assert run["run"].endswith("-m harness.prdiff.action'") or "-m harness.prdiff.action" in run["run"]
    handed = {k.removeprefix("INPUT_").lower().replace("_", "-") for k in run["env"]}
    assert handed == set(action["inputs"]) - {"python"}
    assert {"target", "profile", "scenarios", "shards", "base-report", "github-token", "comment"} <= handed


@pytest.mark.parametrize(("inputs", "says"), [
    ({"INPUT_COMMENT": "yes"}, "input comment: 'yes' is not true or false."),
    ({"INPUT_ARGS": "--target 'unclosed"}, "input args: No closing quotation"),
])
def test_a_bad_input_stops_before_anything_runs(inputs: dict[str, str], says: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert action_main({"GITHUB_WORKSPACE": str(tmp_path), "RUNNER_TEMP": str(tmp_path), **inputs}) == 2
    assert says in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing run, nothing left


def test_run_arguments_pass_the_inputs_through() -> None:
    from harness.prdiff.action import run_arguments

    assert run_arguments({"INPUT_TARGET": "pkg.agent:app", "INPUT_PROFILE": "p.yaml", "INPUT_SCENARIOS": "sc",
                          "INPUT_SHARDS": "2/3", "INPUT_ARGS": "--llm-mode scripted -j 2"}) == [
        "--no-progress", "--target", "pkg.agent:app", "--profile", "p.yaml", "--scenarios-dir", "sc",
        "--shard", "2/3", "--llm-mode", "scripted", "-j", "2"]
