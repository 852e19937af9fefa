"""Re-recording as a reviewed change (harness/rerecord/): ``record`` over an existing cassette writes the new one
into ``cassettes.new/`` with a drift report naming the requests, answers, verdicts and state keys that changed;
the old cassette stays until ``record --accept``. Scripted endpoint on 127.0.0.1: no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cli import EXIT_OK, main

pytestmark = pytest.mark.slow

OLD_ANSWER, NEW_ANSWER = "The total sales amount is 150.", "The total sales amount is 200."


def _record(*extra: str) -> int:
    return main(["record", "--scenario", "cli_smoke", "--no-progress", "-j", "1", *extra])


def _change_recorded_answer(cassette: Path) -> None:
    """The old recording, as if the model had answered otherwise then: the results processor's summary said 150, and
    the analyst's next prompt, which quotes the summary, said so too."""
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    bodies = [i["response"]["body"] for i in data["interactions"] if NEW_ANSWER in i["response"]["body"]["string"]]
    assert len(bodies) == 1
    bodies[0]["string"] = bodies[0]["string"].replace(NEW_ANSWER, OLD_ANSWER)
    quoting = [i["request"] for i in data["interactions"] if NEW_ANSWER in (i["request"]["body"] or "")]
    assert quoting
    for request in quoting:
        request["body"] = request["body"].replace(NEW_ANSWER, OLD_ANSWER)
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_a_changed_answer_waits_for_review_with_a_drift_report(workdir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    cassette, pending = workdir / "cassettes" / "cli_smoke.yaml", workdir / "cassettes.new" / "cli_smoke.yaml"
    assert _record() == EXIT_OK
    assert cassette.is_file() and not pending.exists()  # a first recording goes into place
    assert _record() == EXIT_OK  # the same calls and answers again: nothing to review
    assert "cassette unchanged" in capsys.readouterr().out and not (workdir / "cassettes.new").exists()

    _change_recorded_answer(cassette)
    old_bytes = cassette.read_bytes()
    assert _record() == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert "pending review" in out and "record --accept --scenario cli_smoke" in out
    assert cassette.read_bytes() == old_bytes and pending.is_file()  # nothing overwritten

    report = json.loads((workdir / "reports" / "cassette-drift.json").read_text(encoding="utf-8"))
    (drift,) = report["scenarios"]
    answers = [c for c in drift["calls"] if c["kind"] == "answer"]
    assert [(c["caller"], c["old"], c["new"]) for c in answers] == [("results_processor", OLD_ANSWER, NEW_ANSWER)]
    requests = [c for c in drift["calls"] if c["kind"] == "request"]
    assert [(c["caller"], c["call"]) for c in requests] == [("databricks_analyst", 1)]  # the prompt quoting it
    assert "150" in requests[0]["old"] and "200" in requests[0]["new"]
    keys = {s["key"] for s in drift["state"] if "150" in s["old"] and "200" in s["new"]}
    assert keys, drift["state"]
    markdown = (workdir / "reports" / "cassette-drift.md").read_text(encoding="utf-8")
    assert "results_processor call #1" in markdown and OLD_ANSWER in markdown and NEW_ANSWER in markdown
    assert "**request changed**, databricks_analyst call #2" in markdown
    assert all(f"`{key}`" in markdown for key in keys)
    print(markdown)

    assert _record("--accept") == EXIT_OK
    accepted = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    assert any(NEW_ANSWER in i["response"]["body"]["string"] for i in accepted["interactions"])
    assert not (workdir / "cassettes.new").exists()
    assert main(["run", "--scenario", "cli_smoke", "--no-progress", "-j", "1", "--snapshot-update"]) == EXIT_OK


def test_accept_without_a_pending_recording_changes_nothing(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _record("--accept") == EXIT_OK
    assert "nothing to accept" in capsys.readouterr().out and not (workdir / "cassettes").exists()


def test_a_recording_whose_run_failed_is_not_kept(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store_goes_down = "tests.harness.erroring_targets:StoreGoesDown"  # fails mid-turn, after model calls
    assert _record() == EXIT_OK
    old_bytes = (workdir / "cassettes" / "cli_smoke.yaml").read_bytes()
    capsys.readouterr()
    assert _record("--session-service", store_goes_down) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "not kept" in out or "NOT written" in out
    assert (workdir / "cassettes" / "cli_smoke.yaml").read_bytes() == old_bytes
    assert not (workdir / "cassettes.new").exists()  # so --accept has nothing to take
