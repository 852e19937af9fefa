"""Proof of ``rlm-conformance explore`` on real targets: it finds each known defect, shrinks it to a scenario of at
most two turns that then fails ``run`` with the same check, and finds nothing on the reference agent.

Every run is in-process through the CLI's ``main`` (scripted mode, no network), on seed 0, without an example
database. The budgets are focused so each test stays well under a minute on 2 cores: ``--check`` names the
check(s) the defect breaks (the full run on legacy finds 13 checks in ~70 s; see the report of issue 32's
branch) and ``--max-examples`` is small. The defaults (100 examples) are what a user runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.explore.findings import first_line, shape

pytestmark = pytest.mark.slow

SEED004_PROFILE = "examples/seed004_rlm/rlm-profile.yaml"


def explore(tmp_path: Path, *args: str, examples: int = 15, jobs: int = 1) -> int:
    """``jobs`` 1 unless a test says otherwise: pytest -n 2 fills the cores already."""
    return main(["explore", "--seed", "0", "--no-database", "--no-progress", "--fail-on-find", "-j", str(jobs),
                 "--max-examples", str(examples), "--shrink-runs", "20", "--out", str(tmp_path / "found"), *args])


def written(tmp_path: Path) -> dict[str, dict]:
    """The scenarios explore wrote, by the check each names."""
    out = {}
    for path in sorted((tmp_path / "found").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        check = text.splitlines()[0].rsplit("fails the check ", 1)[1].rstrip(".")
        out[check] = {"path": path, "data": yaml.safe_load(text), "text": text}
    return out


def failing_in_run(tmp_path: Path, scenario: str) -> dict[str, str]:
    """The checks ``rlm-conformance run`` fails on a written scenario (snapshots written, so only checks count),
    each with its first line of evidence."""
    reports = tmp_path / "reports"
    code = main(["run", "--scenario", scenario, "--scenarios-dir", str(tmp_path / "found"), "--llm-mode",
                 "scripted", "--reports-dir", str(reports), "--format", "json", "--snapshot-dir",
                 str(tmp_path / "snapshots"), "--snapshot-update", "--no-progress"])
    result = json.loads((reports / "conformance.json").read_text(encoding="utf-8"))["results"][0]
    failing = {c["name"]: first_line((c["evidence"] or [c["explanation"]])[0])
               for c in result["checks"] if c["status"] == "fail"}
    assert code == (1 if failing or result["status"] != "pass" else 0)
    return failing


def kind(evidence: str) -> str:
    """What stays of a line of evidence from run to run: invocation ids (``e-1196098c-e…``) and numbers go."""
    return shape(re.sub(r"\be-[0-9a-f]+(-[0-9a-f]*)?…?", "e-…", evidence), ())


def turns(data: dict) -> int:
    return sum(len(session["turns"]) for session in data["sessions"])


def assert_found(tmp_path: Path, checks: list[str]) -> None:
    found = written(tmp_path)
    for check in checks:
        assert check in found, f"explore did not find {check}: {sorted(found)}"
        entry = found[check]
        assert turns(entry["data"]) <= 2, entry["text"]
        assert "# Reproduce: rlm-conformance run --scenario" in entry["text"]
        failing = failing_in_run(tmp_path, entry["data"]["name"])
        assert check in failing, entry["text"]
        # The header quotes the evidence of the written scenario's own run, not the search's masked kind of it
        # (ids and timings differ from run to run: compared by kind, and unmasked).
        quoted = next(line for line in entry["text"].splitlines() if line.startswith("#   evidence: "))
        quoted = quoted.removeprefix("#   evidence: ")
        assert kind(quoted) == kind(failing[check]) and "'…'" not in quoted, (quoted, failing[check])


def test_nothing_is_found_on_the_reference_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert explore(tmp_path, "--target", "reference", examples=20) == 0
    assert "Nothing found." in capsys.readouterr().out
    assert not (tmp_path / "found").exists()


def test_only_the_unconfined_repl_is_found_on_the_seed004_example(tmp_path: Path) -> None:
    """The example of another layout is correct in its state mechanics: explore found two real defects in it, both
    fixed (an empty code_generator answer re-ran the previous turn's code: stage_gating; a new turn's prompt dropped
    the durable last result: summary_reaches_prompt). Its REPL runs model-written code as a plain process, which
    the escape probe among explore's seed conversations reports — and nothing else."""
    assert explore(tmp_path, "--target", "examples.seed004_rlm.agent:app", "--profile", SEED004_PROFILE,
                   examples=30) == 1
    found = written(tmp_path)
    assert list(found) == ["executor_confined"]
    assert "write_outside: the code could write a file outside the executor's folders" in found[
        "executor_confined"]["text"]


def test_legacy_defects_are_found_shrunk_and_fail_run(tmp_path: Path, temp_leftovers) -> None:
    """In two worker processes (-j 2): the runs ahead of the search, on a real target, find what -j 1 finds. The
    workers leave no temporary folder behind, those interrupted in runs ahead that the search no longer needs too."""
    checks = ["stage_gating", "summary_persisted", "artifacts_consumed", "no_unpersisted_mutation"]
    assert explore(tmp_path, "--target", "legacy", *[f"--check={c}" for c in checks], examples=8, jobs=2) == 1
    assert temp_leftovers() == []
    assert_found(tmp_path, checks)


def test_the_seed004_defect_is_found_shrunk_and_fails_run(tmp_path: Path) -> None:
    checks = ["stale_flags_cleared", "no_unpersisted_mutation"]
    assert explore(tmp_path, "--target", "examples.seed004_rlm_broken.agent:app", "--profile", SEED004_PROFILE,
                   *[f"--check={c}" for c in checks]) == 1
    assert_found(tmp_path, checks)
    data = written(tmp_path)["stale_flags_cleared"]["data"]
    assert data["target"] == "examples.seed004_rlm_broken.agent:app" and data["profile"].endswith("rlm-profile.yaml")


BROKEN = [  # (factory in tests/broken_targets.py, the check its defect breaks)
    ("temp_leaking_service", "no_temp_persisted"),
    ("unconsumed_artifacts", "artifacts_consumed"),
    ("no_stage_gate", "stage_gating"),
    ("whole_state_delta", "minimal_deltas"),
    ("direct_mutation", "no_unpersisted_mutation"),
    ("executor_env_leak", "executor_env_clean"),
    ("unconfined_executor", "executor_confined"),
]


@pytest.mark.parametrize(("factory", "check"), BROKEN, ids=[f for f, _ in BROKEN])
def test_a_broken_target_is_found_shrunk_and_fails_run(tmp_path: Path, factory: str, check: str) -> None:
    assert explore(tmp_path, "--target", f"tests.broken_targets:{factory}", f"--check={check}") == 1
    assert_found(tmp_path, [check])
