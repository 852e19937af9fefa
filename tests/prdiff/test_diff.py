"""``rlm-conformance diff`` on hand-made pairs of runs: verdicts, state deltas, requests, findings, the comment's
size, and the exit status (1 on a regression only, 2 on bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from harness.prdiff import COMMENT_LIMIT, diff_runs, render_diff_markdown
from tests.prdiff.reports import event, request, result, row, run, trace, write

GREEN = {"stage_gating": "pass", "no_temp_persisted": "pass", "snapshot": "pass"}
EVENTS = [event(0, "user"), event(1, "coder", {"temp:code": "print(1)"}, calls=("run_code",)),
          event(2, "runner", {"temp:output": "1", "runs": 1}),
          event(3, "digest", {"user:summary": "1", "temp:output": None}), event(4, "coder", calls=("exit_loop",))]
# The processor no longer deletes its input: it runs a second time on the stale output.
STALE = [*EVENTS[:3], event(3, "digest", {"user:summary": "1"}), event(4, "digest", {"user:summary": "1"}),
         event(5, "coder", calls=("exit_loop",))]


def _diff(base, head):
    return diff_runs(run(*base), run(*head))


def test_a_check_that_now_fails_is_a_regression_named_by_scenario_check_and_state_key() -> None:
    base = [result("digest_once", GREEN, trace("digest_once", EVENTS)), result("other", GREEN)]
    head = [result("other", {**GREEN, "snapshot": "fail"}),
            result("digest_once", {**GREEN, "stage_gating": "fail", "snapshot": "fail"}, trace("digest_once", STALE),
                   evidence={"stage_gating": ["event #4 (author digest): digest ran again"]})]
    diff = _diff(base, head)
    assert diff.regressed
    text = render_diff_markdown(diff)
    first = text.splitlines()[2]
    # The check before the snapshot rows that follow from it, whatever the scenario order.
    assert "`digest_once`" in first and "`stage_gating`" in first and "pass → fail" in first
    assert "`temp:output` no longer deleted by digest (turn 0, event 3)" in first
    rows = [line for line in text.splitlines() if line.startswith("| ❌")]
    assert "`stage_gating`" in rows[0] and all("`snapshot`" in row for row in rows[1:])
    scenario = next(s for s in diff.scenarios if s.scenario == "digest_once")
    # The second digest run is an event HEAD added; the events after it still meet their counterparts.
    assert [(c.place, c.key, c.change) for c in scenario.state] == [
        ("turn 0, event 3", "temp:output", "no longer deleted"),
        ("turn 0, new event 4", "user:summary", "written in a new event")]
    assert [(f.check, f.change) for f in scenario.findings] == [("stage_gating", "new")]


def test_improvements_and_new_n_a_are_not_regressions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(run(result("a", {**GREEN, "stage_gating": "fail"}), result("b", GREEN)), tmp_path / "base")
    head = write(run(result("a", GREEN), result("b", {**GREEN, "no_temp_persisted": "n/a"}),
                     result("c", GREEN)), tmp_path / "head")
    assert main(["diff", str(base), str(head / "conformance.json"), "--json", str(tmp_path / "d.json")]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[2].startswith("No regression; 3 of 3 scenario(s) changed")
    assert "| ✅ | `a` | `stage_gating` | fail → pass |" in out
    assert "| ➖ | `b` | `no_temp_persisted` | pass → n/a |" in out
    assert "| ➖ | `c` | (scenario) | not run → pass |" in out
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["regressed"] is False and [s["scenario"] for s in data["scenarios"]] == ["a", "b", "c"]


@pytest.mark.parametrize(("base", "head", "check", "verdict"), [
    ([result("a", GREEN)], [result("a", {}, error="the target factory pkg:make raised ImportError")], "scenario",
     "pass → error"),
    ([result("a", GREEN), result("gone", GREEN)], [result("a", GREEN)], "scenario", "pass → gone"),
    ([result("a", GREEN)], [result("a", {**GREEN, "none_deletes": "fail"})], "none_deletes", "not run → fail"),
], ids=["new error", "scenario vanished", "new check failing"])
def test_errors_vanished_scenarios_and_new_failures_are_regressions(base, head, check: str, verdict: str) -> None:
    diff = _diff(base, head)
    assert diff.regressed
    [(scenario, change)] = [(s, v) for s in diff.scenarios for v in s.regressions]
    assert (change.check, f"{change.before or 'not run'} → {change.after or 'gone'}") == (check, verdict)


def test_state_is_compared_without_what_each_run_draws_afresh() -> None:
    """Invocation ids and artifact ids differ every run: the same behaviour is no change."""
    def events(invocation: str, artifact: str):
        return [event(0, "user", invocation=invocation),
                event(1, "runner", {"temp:rlm:active_artifact_id": artifact, "runs": 1}, invocation=invocation)]
    base = result("a", GREEN, trace("a", events("e-aaaaaaaa-0000-0000-0000-000000000001", "0123456789ab"),
                                    [request(0, "coder", "Go e-aaaaaaaa-0000-0000-0000-000000000001",
                                             invocation="e-aaaaaaaa-0000-0000-0000-000000000001")]))
    head = result("a", GREEN, trace("a", events("e-bbbbbbbb-0000-0000-0000-000000000002", "ba9876543210"),
                                    [request(0, "coder", "Go e-bbbbbbbb-0000-0000-0000-000000000002",
                                             invocation="e-bbbbbbbb-0000-0000-0000-000000000002")]))
    diff = _diff([base], [head])
    assert not diff.changed
    assert render_diff_markdown(diff).splitlines()[2] == ("No change: 1 scenario(s), same verdicts, state deltas and "
                                                          "model requests.")


def test_persisted_state_and_model_request_drift() -> None:
    base = result("a", GREEN, trace("a", EVENTS, [request(0, "coder", "Answer.\nLast: {summary}")],
                                    final={"runs": 1}))
    head = result("a", GREEN, trace("a", EVENTS, [request(0, "coder", "Answer.\nLast: 1"), request(1, "coder")],
                                    final={"runs": 1, "temp:leak": "x"}))
    [scenario] = _diff([base], [head]).scenarios
    assert [(c.place, c.key, c.change) for c in scenario.state] == [
        ("persisted session state of s-0", "temp:leak", "now persisted")]
    [drift] = scenario.requests
    assert (drift.agent, drift.count_before, drift.count_after) == ("coder", 1, 2)
    assert drift.changed == ("#1 (turn 0) system instruction: - Last: {summary} / + Last: 1",)
    text = render_diff_markdown(_diff([base], [head]))
    assert "| ➖ | `a` | — | pass (unchanged) | `temp:leak` | 1 state change(s), model requests of coder |" in text
    assert "* model requests of `coder`: 1 → 2, 1 body(ies) changed" in text


def test_event_rows_storage_holds_differently_show_once() -> None:
    """A service that now keeps a temp: key in its rows: the events' deltas are the same, the rows are not. A key the
    events already reported is not reported again for its row."""
    rows = [row(0, "user"), row(1, "runner", {"runs": 1}), row(2, "digest", {"user:summary": "1"})]
    base = result("a", GREEN, trace("a", EVENTS, rows=rows))
    head = result("a", {**GREEN, "no_temp_persisted": "fail"}, evidence={"no_temp_persisted": [
                      "row 1 (author runner) persists 'temp:output'"]},
                  the_trace=trace("a", [*EVENTS[:3], event(3, "digest", {"user:summary": "2", "temp:output": None}), EVENTS[4]],
                        rows=[rows[0], row(1, "runner", {"runs": 1, "temp:output": "1"}),
                              row(2, "digest", {"user:summary": "2"})]))
    [scenario] = _diff([base], [head]).scenarios
    assert [(c.place, c.key, c.change, c.delta) for c in scenario.state] == [
        ("turn 0, event 3", "user:summary", "value changed", "emitted"),
        ("persisted row 1 of s-0", "temp:output", "now written", "row")]
    # The regression is tied to the key its evidence names that only storage shows, not to the earliest event's.
    assert scenario.regressions[0].state.key == "temp:output"
    unnamed = _diff([base], [result("a", {**GREEN, "no_temp_persisted": "fail"}, head.trace)]).scenarios[0]
    assert unnamed.regressions[0].state.key == "user:summary"


def test_findings_new_and_vanished_under_an_unchanged_verdict() -> None:
    base = result("a", {"none_deletes": "fail"}, evidence={"none_deletes": ["row 3 stores null for 'x'"]})
    head = result("a", {"none_deletes": "fail"}, evidence={"none_deletes": ["row 5 stores null for 'y'"]})
    [scenario] = _diff([base], [head]).scenarios
    assert not scenario.verdicts
    assert [(f.change, f.text) for f in scenario.findings] == [("new", "row 5 stores null for 'y'"),
                                                               ("vanished", "row 3 stores null for 'x'")]


def test_the_comment_fits_however_much_changed() -> None:
    base = [result(f"s{i:03}", GREEN, trace(f"s{i:03}", EVENTS)) for i in range(120)]
    head = [result(f"s{i:03}", {**GREEN, "stage_gating": "fail"},
                   trace(f"s{i:03}", [*STALE, *(event(6 + j, "w", {f"k{j}|`x`": "v" * 200}) for j in range(30))]))
            for i in range(120)]
    text = render_diff_markdown(_diff(base, head), report_url="https://ci.example/run/1/conformance.html")
    assert len(text) <= 60_000 < COMMENT_LIMIT
    assert "`s000`" in text.splitlines()[2]
    assert text.rstrip().endswith("all of it is in the `--json` file and the HTML report.*")
    assert "[Full HTML report](https://ci.example/run/1/conformance.html)" in text
    assert text.count("<details>") == text.count("</details>")


def test_bad_input_exits_2_naming_the_file_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(run(result("a", GREEN)), tmp_path / "good")
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    for argument, says in [(tmp_path / "empty", "a folder without conformance.json. Fix:"),
                           (tmp_path / "missing", "no such folder or file. Fix:"),
                           (tmp_path / "bad.json", "bad.json:1: not valid JSON")]:
        assert main(["diff", str(good), str(argument), "--markdown", str(tmp_path / "out.md")]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"HEAD {argument}" in err or f"HEAD: {argument}" in err, err
        assert says in err
    assert not (tmp_path / "out.md").exists()  # nothing written on bad input


def test_markdown_file_and_exit_1_on_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write(run(result("a", GREEN)), tmp_path / "base")
    head = write(run(result("a", {**GREEN, "no_temp_persisted": "fail"})), tmp_path / "head")
    assert main(["diff", str(base), str(head), "--markdown", str(tmp_path / "c.md")]) == EXIT_FAILED
    assert capsys.readouterr().out.startswith("❌ **Regression** in `a`: check `no_temp_persisted` pass → fail")
    assert (tmp_path / "c.md").read_text().startswith("## rlm-conformance: what this change did\n")


def test_a_shard_is_compared_on_the_scenarios_both_runs_hold() -> None:
    """A scenario of another shard is neither vanished nor added: left out, and counted."""
    base = run(result("a", GREEN), result("b", GREEN), result("c", GREEN))
    head = run(result("a", {**GREEN, "stage_gating": "fail"}), result("d", GREEN))
    head.extra["shard"] = "1/2"
    diff = diff_runs(base, head)
    assert [s.scenario for s in diff.scenarios] == ["a"] and diff.regressed
    assert diff.not_compared == {"base": 2, "head": 1, "shards": "1/2"}
    assert "Sharded run (1/2): only the scenarios both runs hold are compared; 2 only in base and 1 only in head" \
        in render_diff_markdown(diff)
