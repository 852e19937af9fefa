"""``export evalset`` when some scenarios do not run cleanly: the others are exported, each refused one is named
with its error, exit 1; a run that did not follow its script (here a sub-model call the script has no answer for)
is refused too — its eval set would record the agent's handling of the endpoint's HTTP 400 as the trajectory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

AGENT = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm"
TARGET = "tests.user_agents.tool_rlm.agent:app"


def _scenarios(folder: Path, *, good: bool) -> None:
    text = (AGENT / "scenarios" / "llm_query_tool.yaml").read_text(encoding="utf-8").replace(
        "profile: ../rlm-profile.yaml", f"profile: {AGENT / 'rlm-profile.yaml'}")
    folder.mkdir()
    if good:
        (folder / "llm_query_tool.yaml").write_text(text, encoding="utf-8")
    no_answer = text.replace("name: llm_query_tool", "name: no_sub_lm_answer").replace(
        "  sub_lm:\n    - text: positive\n", "")
    (folder / "no_sub_lm_answer.yaml").write_text(no_answer, encoding="utf-8")
    unknown_tool = text.replace("name: llm_query_tool", "name: unknown_tool").replace("call: run_python",
                                                                                      "call: no_such_tool")
    (folder / "unknown_tool.yaml").write_text(unknown_tool, encoding="utf-8")


def _export(folder: Path, out: Path) -> int:
    return main(["export", "evalset", "--out", str(out), "--scenarios-dir", str(folder), "--target", TARGET,
                 "--profile", str(AGENT / "rlm-profile.yaml")])


@pytest.mark.slow
def test_the_clean_scenarios_are_exported_and_each_refused_one_named(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    _scenarios(tmp_path / "s", good=True)
    out = tmp_path / "all.evalset.json"
    assert _export(tmp_path / "s", out) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert f"wrote {out}: 1 eval case(s)" in said
    assert "not exported scenario no_sub_lm_answer: the run did not follow its script:" in said
    assert "'sub_lm' called its model 1 time(s) but the script has no 'sub_lm' key" in said
    assert "not exported scenario unknown_tool:" in said  # ADK 2.x answers the model an error, 1.x raises
    assert [c.eval_id for c in load_eval_set_from_file(str(out), "all").eval_cases] == ["llm_query_tool"]


@pytest.mark.slow
def test_when_every_scenario_is_refused_nothing_is_written(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _scenarios(tmp_path / "s", good=False)
    out = tmp_path / "none.evalset.json"
    assert _export(tmp_path / "s", out) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert f"nothing written to {out}: no scenario could be exported" in said
    assert "not exported scenario no_sub_lm_answer" in said and "not exported scenario unknown_tool" in said
    assert not out.exists()
