"""``record`` refuses a recording whose script does not fit the target; a scripted ``run`` reports it.

Each case is a scenario file in a temporary folder: ``record`` exits 1, names the file:line of the
misfit (and a did-you-mean for a key that names no agent), and saves nothing — no cassette where there
was none, an old cassette byte for byte as it was. Declared faults are fine. A scripted ``run`` shows the
same problems as its failing ``script`` row, beside checks that still judged the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vcr.request import Request

from harness.cli import EXIT_FAILED, EXIT_OK, main
from harness.checks.run_rows import SCRIPT_VERDICT
from harness.run.script_fit import live_error_problems
from harness.run.model_session import LlmSession
from harness.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parents[2]
NAME = "fit_smoke"
# The line numbers below are this text's: the messages must point at them.
SCENARIO = """\
name: fit_smoke
description: One delegation, executed, summarised, then the analyst exits the loop.
context: {sales: [{region: north, amount: 120}, {region: south, amount: 80}]}
sessions:
  - user: analyst_1
    turns:
      - user: What is the total sales amount?
script:
  databricks_analyst:
    - call: delegate_code_results
      args:
        code: "print(sum(r['amount'] for r in context['sales']))"
        instruction: Report the total.
    - call: exit_loop
  results_processor:
    - text: "The total sales amount is 200."
"""
ANALYST_LINE, EXIT_STEP_LINE, PROCESSOR_LINE = 9, 14, 15


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "1000")  # one message, one line
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    return tmp_path


def _scenario(text: str) -> Path:
    path = Path("scenarios") / f"{NAME}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _record(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["record", "--scenario", NAME, "--no-progress"])
    return code, capsys.readouterr().out


def _error(workdir: Path) -> str:
    [result] = json.loads((workdir / "reports" / "conformance.json").read_text(encoding="utf-8"))["results"]
    return result["error"]


CASSETTE = Path("cassettes") / f"{NAME}.yaml"


def test_a_script_key_naming_no_agent_is_refused_with_a_did_you_mean(workdir: Path, capsys) -> None:
    scenario = _scenario(SCENARIO.replace("  results_processor:", "  results_procesor:"))
    code, out = _record(capsys)
    assert code == EXIT_FAILED
    assert f"cassette NOT written: {CASSETTE}" in out and not CASSETTE.exists()
    expected = (f"{scenario}:{PROCESSOR_LINE}: field 'script.results_procesor': no agent of target 'reference' is "
                f"named 'results_procesor' (its agents: databricks_analyst, job_builder, orchestrator_loop, "
                f"results_processor; 'sub_lm' is for llm_query calls of executed code). Fix: did you mean "
                f"'results_processor'? Rename the key")
    assert expected in out and expected in _error(workdir)
    # the agent the typo left without answers got the endpoint's 400: named too, at the script's line
    assert "agent 'results_processor' called its model 1 time(s) but the script has no 'results_processor' key" in out


def test_an_undeclared_400_is_refused_and_an_old_cassette_stays_as_it_was(workdir: Path, capsys) -> None:
    old = (ROOT / "cassettes" / "single_delegation.yaml").read_bytes()
    CASSETTE.parent.mkdir()
    CASSETTE.write_bytes(old)
    # without its exit_loop step the analyst's second call is past the end of its script: HTTP 400
    scenario = _scenario(SCENARIO.replace("    - call: exit_loop\n", ""))
    code, out = _record(capsys)
    assert code == EXIT_FAILED
    assert CASSETTE.read_bytes() == old
    assert (f"{scenario}:{ANALYST_LINE}: field 'script.databricks_analyst': agent 'databricks_analyst' called its "
            f"model 2 time(s) but script.databricks_analyst has 1 step(s): call index 1 got HTTP 400") in out
    assert "cassette NOT written" in out and "Replay them with" not in out


def test_a_scripted_answer_never_asked_for_is_refused(workdir: Path, capsys) -> None:
    extra = '    - text: "A second summary nobody asks for."\n'
    scenario = _scenario(SCENARIO + extra)
    code, out = _record(capsys)
    assert code == EXIT_FAILED and not CASSETTE.exists()
    assert (f"{scenario}:{PROCESSOR_LINE + 2}: field 'script.results_processor[1]': 1 step(s) of "
            f"script.results_processor from index 1 on were never asked for: results_processor called its model "
            f"only 1 time(s)") in _error(workdir)


def test_declared_faults_are_recorded(workdir: Path, capsys) -> None:
    _scenario(SCENARIO.replace("  results_processor:\n", "  results_processor:\n    - fault: http_503\n"))
    code, out = _record(capsys)
    assert code == EXIT_OK, out
    assert f"cassette written: {CASSETTE}" in out and CASSETTE.is_file()
    assert "status:\n      code: 503" in CASSETTE.read_text(encoding="utf-8")


def test_a_scripted_run_reports_the_misfit_beside_its_checks(workdir: Path, capsys) -> None:
    scenario = _scenario(SCENARIO.replace("    - call: exit_loop\n", ""))
    assert main(["run", "--scenario", NAME, "--llm-mode", "scripted", "--no-progress"]) == EXIT_FAILED
    [result] = json.loads((workdir / "reports" / "conformance.json").read_text(encoding="utf-8"))["results"]
    rows = {check["name"]: check for check in result["checks"]}
    assert rows[SCRIPT_VERDICT]["status"] == "fail"
    assert rows[SCRIPT_VERDICT]["evidence"][0].startswith(f"{scenario}:{ANALYST_LINE}: field 'script.databricks_")
    assert rows["stage_gating"]["status"] == "pass"  # the checks still judged the run
    assert f"{scenario}:{ANALYST_LINE}: field 'script.databricks_analyst'" in capsys.readouterr().out


def test_a_live_recording_with_an_error_answer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / f"{NAME}.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    scenario = load_scenario(path)
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    ok, limited = ({"status": {"code": code, "message": ""}} for code in (200, 429))
    cassette = type("Recording", (), {"data": [(Request("POST", uri, b"{}", {}), ok),
                                               (Request("POST", uri, b"{}", {}), limited)]})()
    session = LlmSession(endpoint=None, mode_label="live", scenario=NAME, rerecord="", cassette=cassette)
    [problem] = live_error_problems(scenario, session)
    assert problem.path == str(path) and problem.line == ANALYST_LINE - 1  # the script: line
    assert "HTTP 429 to interaction #1" in problem.text and "declares no (more) fault answering 429" in problem.text
    # a fault the script declares may be in the recording, as often as declared
    path.write_text(SCENARIO.replace("  results_processor:\n", "  results_processor:\n    - fault: http_429\n"),
                    encoding="utf-8")
    assert live_error_problems(load_scenario(path), session) == []
