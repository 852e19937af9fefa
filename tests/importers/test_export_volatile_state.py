"""``export evalset`` writes no value the run drew afresh into ``final_session_state`` (ids, wall clock, temporary
paths: the snapshots' normalisation), so the same scenarios export the same file; ``import evalset`` leaves the
normalised keys out of the expected state, so the export imports back green under any scenario name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.importers.evalset import import_eval_sets
from harness.importers.export import export_eval_set
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario, parse_scenario
from harness.snapshot.normalize import holds_placeholder
from tests.importers.test_import_evalset import PROFILE, RECORDED, TOOL_RLM

ROOT = Path(__file__).resolve().parents[2]


def _export(scenarios, tmp_path: Path, **options):
    eval_set, refused = export_eval_set(scenarios, RunOptions(cassette_dir=tmp_path / "c", **options),
                                        eval_set_id="volatile")
    assert not refused, refused
    return eval_set


@pytest.mark.slow
def test_the_reference_agents_run_drawn_values_are_normalised_and_two_exports_are_equal(tmp_path: Path) -> None:
    """Its artifact ids (uuid4 in Job_B's folder), result paths under the run's temporary home and execution times
    made every export of the same scenario a different file."""
    scenario = load_scenario(ROOT / "scenarios" / "llm_query.yaml")
    first, second = (_export([scenario], tmp_path / str(n), target="reference") for n in (1, 2))
    [a], [b] = first.eval_cases, second.eval_cases
    assert a.final_session_state == b.final_session_state
    assert a.final_session_state["rlm:last_artifact_id"] == "<artifact:1>"
    assert a.final_session_state["rlm:metrics"]["execution_time_s"] == "<redacted>"
    assert holds_placeholder(a.final_session_state["rlm:last_result_json_path"])
    assert "/tmp/" not in str(a.final_session_state)


@pytest.mark.slow
def test_an_outside_agents_export_imports_back_green_under_its_own_name(tmp_path: Path) -> None:
    """tool_rlm names a state key after the artifact id it drew (``artifact:code_<12 hex>.py``); the imported
    scenario, named otherwise, draws another id offline, so expecting the exported key failed the round trip."""
    scenario = parse_scenario(RECORDED.format(profile=PROFILE), path=str(tmp_path / "math_six_times_seven.yaml"),
                              stem="math_six_times_seven")
    eval_set = _export([scenario], tmp_path, target="tests.user_agents.tool_rlm.agent:app")
    [case] = eval_set.eval_cases
    [drawn] = [key for key in case.final_session_state if key.startswith("artifact:")]
    assert drawn == "artifact:code_<artifact:1>.py"
    path = tmp_path / "eval" / "volatile.evalset.json"
    path.parent.mkdir()
    path.write_text(eval_set.model_dump_json(exclude_none=True), encoding="utf-8")

    [back], refused = import_eval_sets(path, TOOL_RLM, exact_state=True, profile=str(PROFILE))
    assert not refused
    assert drawn not in back.scenario["expect"]["state"] and back.scenario["expect"]["state"]["answer"] == "43"
    assert back.scenario["expect"]["state_match"] == "subset"
    [note] = back.notes
    assert repr(drawn) in note and "not --exact-state" in note
    out = tmp_path / "back" / f"{back.name}.yaml"  # its own name: the ids it draws are not the export's
    out.parent.mkdir()
    out.write_text(yaml.safe_dump(back.scenario, sort_keys=False), encoding="utf-8")
    result = run_scenario(load_scenario(out), RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "c2"))
    failing = {c.name: c.evidence for c in result.checks if c.status.value == "fail"}
    assert result.status == "pass", failing or result.error
