"""Accepted findings (harness/run/baseline.py, issue 51): a baseline a team commits; ``run`` fails only on what it
does not accept, lists what was accepted and names an accepted finding that no longer occurs. Shown on a broken
target (tests/broken_targets.py: whole_state_delta fails minimal_deltas), in scripted mode, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.run.baseline import NEW_REASON, Accepted, Baseline, judge, load_baseline
from harness.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

BROKEN = "tests.broken_targets:whole_state_delta"


def run(*flags: str) -> int:
    return main(["run", "--target", BROKEN, "--llm-mode", "scripted", "--snapshot-dir", "snaps", "--snapshot-update",
                 "--no-progress", "--format", "json", *flags])


@pytest.mark.slow
def test_run_fails_only_on_what_the_baseline_does_not_accept(workdir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run() == EXIT_FAILED
    capsys.readouterr()
    assert run("--write-baseline", "accepted.yaml") == EXIT_OK  # what it wrote accepts this run's findings
    assert "wrote" in capsys.readouterr().out
    entries = yaml.safe_load((workdir / "accepted.yaml").read_text(encoding="utf-8"))["accepted"]
    assert {"check": "minimal_deltas", "where": "cli_smoke", "reason": NEW_REASON} in entries

    reasoned = [{**e, "reason": "the store writes whole states by design"} for e in entries]
    (workdir / "accepted.yaml").write_text(yaml.safe_dump({"accepted": reasoned}), encoding="utf-8")
    assert run("--baseline", "accepted.yaml") == EXIT_OK
    out = capsys.readouterr().out
    assert "accepted by accepted.yaml: minimal_deltas in cli_smoke (the store writes whole states by design)" in out

    others = [e for e in reasoned if e["check"] != "minimal_deltas"]
    stale = {"check": "stage_gating", "where": "cli_smoke", "reason": "fixed since"}
    (workdir / "accepted.yaml").write_text(yaml.safe_dump({"accepted": [*others, stale]}), encoding="utf-8")
    assert run("--baseline", "accepted.yaml") == EXIT_FAILED  # minimal_deltas is no longer accepted
    out = " ".join(capsys.readouterr().out.split())
    assert "no longer occurs: stage_gating in cli_smoke (fixed since)" in out


def test_a_baseline_entry_without_a_reason_is_a_usage_error_naming_the_field(
        workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "accepted.yaml").write_text("accepted:\n  - {check: minimal_deltas, where: cli_smoke}\n",
                                           encoding="utf-8")
    assert main(["run", "--baseline", "accepted.yaml", "--no-progress"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "accepted.yaml" in err and "accepted[0].reason" in err


def test_an_entry_for_every_scenario_accepts_the_check_anywhere_and_is_stale_when_it_never_fails() -> None:
    baseline = Baseline(Path("b.yaml"), (Accepted("executor_confined", "*", "confined at the container"),
                                         Accepted("stage_gating", "other", "known")))
    judged = judge([("executor_confined", "a"), ("minimal_deltas", "a")], baseline, judged=["a"])
    assert judged.unaccepted == (("minimal_deltas", "a"),)
    assert [(e.check, where) for e, where in judged.accepted] == [("executor_confined", "a")]
    assert judged.stale == ()  # 'other' did not run: its entry says nothing this time
    assert judge([], baseline, judged=["a"]).stale == (baseline.entries[0],)
    assert judge([], baseline, judged=["a"], checks=["minimal_deltas"]).stale == ()  # explore --check: not searched
    assert load_baseline  # the loader's errors: the test above
