"""``rlm-conformance export evalset``: scenarios -> an eval set ADK's own loader reads, whose cases import back
into scenarios that run green (the round trip through ADK's format loses nothing the checks need)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.importers.evalset import import_eval_sets
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from tests.importers.test_import_evalset import PROFILE, RECORDED, TOOL_RLM

TARGET = "tests.user_agents.tool_rlm.agent:app"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "math_six_times_seven.yaml").write_text(RECORDED.format(profile=PROFILE),
                                                                       encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_export_then_adk_loads_it_then_it_imports_back_green(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    out = project / "eval" / "conformance.evalset.json"
    assert main(["export", "evalset", "--out", str(out), "--target", TARGET, "--profile", str(PROFILE)]) == 0
    assert f"wrote {out}: 1 eval case(s)" in capsys.readouterr().out
    eval_set = load_eval_set_from_file(str(out), "conformance")  # ADK's own loader
    [case] = eval_set.eval_cases
    assert case.eval_id == "math_six_times_seven" and len(case.conversation) == 2
    assert case.session_input.user_id == "u7" and case.session_input.state == {"user:tier": "gold"}
    assert case.final_session_state["answer"] == "43"
    events = case.conversation[0].intermediate_data.invocation_events
    tools = [p.function_call.name for e in events if e.content for p in e.content.parts or () if p.function_call]
    assert tools == ["run_python", "finish"]

    [back], refused = import_eval_sets(out, TOOL_RLM, exact_state=True, profile=str(PROFILE))
    assert not refused
    path = project / "back" / "math_six_times_seven.yaml"  # the name seeds the agent's ids, as when it was run
    path.parent.mkdir()
    back.scenario["name"] = "math_six_times_seven"
    path.write_text(yaml.safe_dump(back.scenario, sort_keys=False), encoding="utf-8")
    result = run_scenario(load_scenario(path), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=project / "c"))
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error


@pytest.mark.slow
def test_a_scenario_that_does_not_run_is_not_exported(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = RECORDED.format(profile=PROFILE).replace("name: math_six_times_seven", "name: broken").replace(
        "  summarizer:\n    - text: \"The code printed 42.\"\n", "")
    (project / "scenarios" / "broken.yaml").write_text(broken, encoding="utf-8")
    out = project / "all.evalset.json"
    assert main(["export", "evalset", "--out", str(out), "--target", TARGET, "--profile", str(PROFILE)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "not exported scenario broken:" in text and f"wrote {out}: 1 eval case(s)" in text


def test_the_exported_session_input_holds_the_context_the_target_was_given(project: Path) -> None:
    """The scenario's context goes into state under the profile's context_key when the harness creates the session:
    export wrote only initial_state, so the re-imported scenario's code ran without its data (a newcomer's report)."""
    from harness.importers.export import export_eval_set
    from harness.targets.profile import load_profile

    profile_path = project / "rlm-profile.yaml"
    profile_path.write_text(PROFILE.read_text(encoding="utf-8") + "context_key: data\n", encoding="utf-8")
    text = RECORDED.format(profile=profile_path).replace("sessions:", "context: {rows: [1, 2, 3]}\nsessions:", 1)
    (project / "scenarios" / "math_six_times_seven.yaml").write_text(text, encoding="utf-8")
    scenario = load_scenario(project / "scenarios" / "math_six_times_seven.yaml")
    eval_set, refused = export_eval_set([scenario], RunOptions(cassette_dir=project / "c", target=TARGET,
                                        profile=load_profile(profile_path), profile_path=profile_path),
                                        eval_set_id="ctx")
    assert not refused, refused
    [case] = eval_set.eval_cases
    assert case.session_input.state == {"user:tier": "gold", "data": {"rows": [1, 2, 3]}}


@pytest.mark.slow
def test_sub_model_answers_no_eval_set_holds_are_named_then_supplied(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The reference agent's code asks the sub-model (llm_query): ADK's conversion keeps no such call, so the
    imported scenario stopped at it with nothing said at import. Now import names the step and the fix, and
    --sub-lm FILE gives the answers: the round trip runs green."""
    from harness.importers.evalset import agent_tree
    from harness.init.project import load_target_app

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "eval" / "llm_query.evalset.json"
    assert main(["export", "evalset", "--out", str(out), "--scenarios-dir", str(root / "scenarios"),
                 "--scenario", "llm_query"]) == 0
    tree = agent_tree(load_target_app("reference", allow_builtin=True))
    [bare], _ = import_eval_sets(out, tree)
    assert "sub_lm" not in bare.scenario["script"]
    [note] = [n for n in bare.notes if "sub-model" in n or "llm_query" in n]
    assert "databricks_analyst[0]" in note and "--sub-lm FILE" in note

    answers = tmp_path / "answers.yaml"
    answers.write_text("- positive\n", encoding="utf-8")
    [back], refused = import_eval_sets(out, tree, sub_lm=answers)
    assert not refused and back.scenario["script"]["sub_lm"] == [{"text": "positive"}]
    # The reference agent keeps a scenario's context in its volume, not in session state, and draws its artifact
    # ids and folders at random: an eval set holds neither (docs/import.md), so both are given back here.
    back.scenario.update(name="llm_query", context={"review": "The delivery was fast and the product works."})
    back.scenario.pop("expect")
    path = tmp_path / "back" / "llm_query.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(back.scenario, sort_keys=False), encoding="utf-8")
    result = run_scenario(load_scenario(path), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c"))
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error
    assert result.check("script").status.value == "pass"  # the sub-model's answer was asked for and served
    assert [x.sublm_calls for x in result.trace.executions] == [1]


def test_a_sub_model_answers_file_that_is_not_a_list_names_the_fix(tmp_path: Path) -> None:
    from harness.importers.sub_model import SubModelAnswersError, load_sub_model_answers

    bad = tmp_path / "answers.yaml"
    bad.write_text("just text\n", encoding="utf-8")
    with pytest.raises(SubModelAnswersError, match=r"answers\.yaml: sub-model answers are a YAML list"):
        load_sub_model_answers(bad)
    bad.write_text("case: [positive, [nested]]\n", encoding="utf-8")
    with pytest.raises(SubModelAnswersError, match=r"case\[1\]: an answer is a text or a script step"):
        load_sub_model_answers(bad)
