"""A turn that raises is the verdict ``error``, naming the exception and the part that raised it, in every
report and in the exit status — unless the scenario declares that error (``expect_error``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import main
from harness.llm.modes import LlmMode
from harness.report import render_junit, render_markdown
from harness.result import RunReport
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.trace.crash import describe_error

ROOT = Path(__file__).resolve().parents[2]


def _report(*results) -> RunReport:
    return RunReport(results=tuple(results), started_at="2026-11-25T00:00:00+00:00", machine="test",
                     tool_version="0")


@pytest.fixture(scope="module")
def plugin_crash():
    scenario = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
    return run_scenario(scenario, RunOptions(target="tests.crashing_targets:plugin_raises_after_run",
                                             llm_mode=LlmMode.SCRIPTED))


def test_a_plugin_crash_after_the_run_is_an_error_not_a_model_error(plugin_crash) -> None:
    assert plugin_crash.status == "error" and not plugin_crash.ok
    [turn] = plugin_crash.crashed_turns
    crash = turn.outcome.crash
    assert crash.origin == "plugin exploding_after_run"
    assert "the audit sink is unreachable" in crash.message and crash.cause.startswith("ValueError")
    assert turn.outcome.termination == "agent_error"


def test_the_crash_is_in_junit_and_markdown(plugin_crash) -> None:
    report = _report(plugin_crash)
    cases = ET.fromstring(render_junit(report)).findall(".//testcase")
    errors = [c.find("error") for c in cases if c.find("error") is not None]
    assert len(errors) == 1 and errors[0].get("type") == "RuntimeError"
    assert "plugin exploding_after_run" in errors[0].text
    markdown = render_markdown(report)
    assert "⚠️ error" in markdown
    assert "raised RuntimeError from plugin exploding_after_run" in markdown


def test_a_user_app_whose_agent_raises_fails_the_run_in_every_format(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one console line per message, whatever the terminal
    code = main(["run", "--target", "tests.crashing_targets:crashing_app", "--scenario", "single_delegation",
                 "--llm-mode", "scripted", "--reports-dir", str(tmp_path), "--no-progress"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1
    assert "ERROR" in out and "KeyError from agent crashing_root" in out
    assert "KeyError from agent crashing_root" in (tmp_path / "conformance.md").read_text()
    assert "KeyError from agent crashing_root" in (tmp_path / "conformance.html").read_text()
    junit = ET.fromstring((tmp_path / "conformance.xml").read_text())
    assert junit.get("errors") == "1"
    assert '"status": "error"' in (tmp_path / "conformance.json").read_text()


def test_a_declared_error_is_judged_not_an_error() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "model_error_then_next_turn.yaml")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.ok, result
    assert result.trace.turns[0].outcome.crash.expected


def test_an_undeclared_model_error_is_an_error() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "model_error_then_next_turn.yaml")
    first = scenario.sessions[0].turns[0].model_copy(update={"expect_error": None})
    session = scenario.sessions[0].model_copy(update={"turns": [first, *scenario.sessions[0].turns[1:]]})
    result = run_scenario(scenario.model_copy(update={"sessions": [session]}), RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.status == "error"
    assert result.crashed_turns[0].outcome.crash.origin == "model"


def test_describe_error_reads_the_innermost_building_block() -> None:
    try:
        raise KeyError("x")
    except KeyError as exc:
        assert describe_error(exc).origin == "unknown"


@pytest.mark.slow
def test_a_session_service_that_raises_mid_turn_is_named() -> None:
    scenario = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED,
                                               session_service="tests.crashing_targets:store_down_at_summary"))
    assert result.status == "error"
    crash = result.crashed_turns[0].outcome.crash
    assert crash.type == "ConnectionError" and crash.origin == "session service StoreDownAtSummary"
    assert result.crashed_turns[0].outcome.termination == "agent_error"


# --- an outcome stored as a number ----------------------------------------------------------------------------


def _number_app():
    """An agent whose code stored FINAL(200) as the number it is, and its status as a number too."""
    from google.adk.agents import BaseAgent
    from google.adk.apps import App
    from google.adk.events import Event, EventActions

    class Answers(BaseAgent):
        async def _run_async_impl(self, ctx):  # type: ignore[override]
            yield Event(author=self.name, invocation_id=ctx.invocation_id,
                        actions=EventActions(state_delta={"answer": 200, "status": 3}))

    return App(name="number_app", root_agent=Answers(name="answers"))


def test_an_outcome_stored_as_a_number_is_judged_not_an_error(tmp_path: Path) -> None:
    """A state value may be any JSON value: the turn's outcome read final_answer_key and termination_key as strings,
    and a number ended the scenario as 'turn 0 raised ValidationError from unknown', blamed on the agent (a
    newcomer's report). Now the outcome holds their text and outcome_from_storage compares it with the number."""
    from harness.targets.profile import load_profile

    (tmp_path / "profile.yaml").write_text(
        "name: number_app\ntarget: tests.harness.test_turn_errors:_number_app\n"
        "final_answer_key: answer\ntermination_key: status\n", encoding="utf-8")
    (tmp_path / "numbers.yaml").write_text(
        "name: numbers\ndescription: one turn whose outcome is stored as numbers\nprofile: profile.yaml\n"
        "sessions:\n  - user: u\n    turns:\n      - user: hi\nscript: {}\n", encoding="utf-8")
    result = run_scenario(load_scenario(tmp_path / "numbers.yaml"), RunOptions(
        llm_mode=LlmMode.SCRIPTED, target="tests.harness.test_turn_errors:_number_app",
        profile=load_profile(tmp_path / "profile.yaml"), profile_path=tmp_path / "profile.yaml"))
    assert result.error is None and not result.crashed_turns, result.error
    outcome = result.trace.turns[0].outcome
    assert (outcome.final_answer, outcome.termination) == ("200", "3")
    assert next(c for c in result.checks if c.name == "outcome_from_storage").status.value == "pass"
