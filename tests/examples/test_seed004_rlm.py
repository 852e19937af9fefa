"""The seed-004 example agent, run by ADK's InMemoryRunner alone (no harness): FakeLlm + fake Gemini."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from examples.seed004_rlm import keys
from examples.seed004_rlm.agent import build_root_agent
from examples.seed004_rlm.code_executor import NO_CODE, preview
from tests.examples.conftest import repl, run_agent
from tests.python_source import parse_file

ROOT = Path(__file__).resolve().parents[2]
SALES = {"sales": [{"region": "north", "amount": 120}, {"region": "south", "amount": 80}]}
TOTAL_CODE = "total = sum(r['amount'] for r in context['sales'])\nprint(total)\nFINAL('The total is ' + str(total))"
EXECUTOR_KEYS = {keys.EXECUTION_RESULT, keys.ITERATION_HISTORY, keys.ITERATION}


async def run_correct(**kwargs):
    return await run_agent(build_root_agent, app_name="seed004_rlm", **kwargs)


def test_layout_and_names() -> None:
    from examples.seed004_rlm.agent import app, root_agent

    assert app.name == "seed004_rlm" and app.root_agent is root_agent
    assert root_agent.name == "rlm_pipeline"
    loader, loop, formatter = root_agent.sub_agents
    assert (loader.name, loop.name, formatter.name) == ("context_loader", "rlm_loop", "result_formatter")
    assert [a.name for a in loop.sub_agents] == ["code_generator", "code_executor", "completion_checker"]
    assert loop.sub_agents[0].output_key == keys.GENERATED_CODE and formatter.output_key == keys.FORMATTED_ANSWER
    assert callable(loop.sub_agents[0].instruction), "an instruction provider, so code in the prompt is not templated"


def test_examples_know_nothing_of_the_harness_and_use_public_adk() -> None:
    for folder in (p.name for p in (ROOT / "examples").iterdir() if (p / "agent.py").exists()):
        assert not (ROOT / "examples" / folder / "services.py").exists()
        for path in (ROOT / "examples" / folder).glob("*.py"):
            for node in ast.walk(parse_file(path)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                for name in names:
                    parts = name.split(".")
                    assert parts[0] not in {"harness", "reference_agent", "tests"}, f"{path}: {name}"
                    assert not (parts[0] == "google" and any(p.startswith("_") for p in parts)), f"{path}: {name}"


async def test_one_delegation_to_final() -> None:
    run = await run_correct(context=SALES, turns=["What is the total sales amount?"], script={
        "code_generator": [repl(TOTAL_CODE)], "result_formatter": ["The total sales amount is 200."]})
    stored = (await run.stored_session()).state
    assert stored[keys.FINAL_ANSWER] == "The total is 200"
    assert stored[keys.STATUS] == keys.STATUS_DONE
    assert stored[keys.FORMATTED_ANSWER] == "The total sales amount is 200."
    assert stored[keys.EXECUTION_RESULT] == "200\n"
    # One executor event, holding only its own keys.
    (executed,) = run.deltas_of("code_executor")
    (artifact_key,) = [k for k in executed if k.startswith(keys.ARTIFACT_PREFIX)]
    assert set(executed) == EXECUTOR_KEYS | {artifact_key, keys.FINAL_ANSWER}
    assert executed[artifact_key] == keys.EXECUTED
    artifact_id = artifact_key.removeprefix(keys.ARTIFACT_PREFIX)
    assert executed[keys.ITERATION_HISTORY] == [
        {"iteration": 1, "code_artifact": artifact_id, "stdout": "200\n", "error": None}]
    assert await run.artifact_text(artifact_id) == TOTAL_CODE + "\n"
    (executor_event,) = [e for e in run.events if e.author == "code_executor"]
    assert executor_event.actions.artifact_delta == {artifact_id: 0}
    # The checker consumed the artifact and escalated, in its own event.
    (checker_event,) = [e for e in run.events if e.author == "completion_checker"]
    assert checker_event.actions.escalate is True
    assert dict(checker_event.actions.state_delta) == {artifact_key: keys.CONSUMED, keys.STATUS: keys.STATUS_DONE}
    assert stored[artifact_key] == keys.CONSUMED
    # The generator saw the context description; the formatter saw the final answer.
    assert "`context` is a dict of 1 items (keys: sales)" in run.llm.seen("code_generator")[0].system_instruction
    assert "The total is 200" in run.llm.seen("result_formatter")[0].system_instruction
    assert run.probe.states[-1] == stored


@pytest.mark.slow
async def test_llm_query(sublm) -> None:
    fake = sublm(lambda prompt: "SUMMARY(" + prompt + ")")
    code = "answer = llm_query('Summarise: ' + context)\nprint(answer)\nFINAL_VAR('answer')"
    run = await run_correct(context="a long report", turns=["Summarise the report."], script={
        "code_generator": [repl(code)], "result_formatter": ["Summarised."]})
    stored = (await run.stored_session()).state
    assert fake.prompts == ["Summarise: a long report"]
    assert stored[keys.FINAL_ANSWER] == "SUMMARY(Summarise: a long report)"
    assert stored[keys.EXECUTION_RESULT] == "SUMMARY(Summarise: a long report)\n"


@pytest.mark.slow
async def test_llm_query_batched_is_concurrent_and_ordered(sublm) -> None:
    fake = sublm(lambda prompt: prompt.upper(), delay=0.4)
    code = ("labels = llm_query_batched(['review: ' + r for r in context])\n"
            "print(labels)\nFINAL(', '.join(labels))")
    run = await run_correct(context=["good", "bad", "fine", "awful"], turns=["Label the reviews."], script={
        "code_generator": [repl(code)], "result_formatter": ["Labelled."]})
    stored = (await run.stored_session()).state
    assert sorted(fake.prompts) == ["review: awful", "review: bad", "review: fine", "review: good"]
    assert fake.max_in_flight >= 2, "llm_query_batched sent its prompts one at a time"
    assert stored[keys.FINAL_ANSWER] == "REVIEW: GOOD, REVIEW: BAD, REVIEW: FINE, REVIEW: AWFUL"


async def test_error_then_fix_keeps_variables_and_shows_the_error() -> None:
    broken = "regions = set()\nprint(sum(r['amount'] for r in context['sales']) / len(regions))"
    fixed = ("regions = {r['region'] for r in context['sales']}\n"
             "FINAL(sum(r['amount'] for r in context['sales']) / len(regions))")
    run = await run_correct(context=SALES, turns=["Average sale per region?"], script={
        "code_generator": [repl(broken), repl("print(type(regions).__name__, len(regions))"), repl(fixed)],
        "result_formatter": ["The average sale per region is 100.0."]})
    stored = (await run.stored_session()).state
    history = stored[keys.ITERATION_HISTORY]
    assert [h["iteration"] for h in history] == [1, 2, 3]
    assert history[0]["error"] == "ZeroDivisionError: division by zero"
    assert history[1] == {**history[1], "stdout": "set 0\n", "error": None}, "REPL variables persist"
    assert stored[keys.FINAL_ANSWER] == "100.0" and stored[keys.ITERATION] == 3
    second_prompt = run.llm.seen("code_generator")[1].system_instruction
    assert "Error: ZeroDivisionError: division by zero" in second_prompt
    assert all(stored[keys.artifact_key(h["code_artifact"])] == keys.CONSUMED for h in history)
    assert len({h["code_artifact"] for h in history}) == 3
    checker = [e for e in run.events if e.author == "completion_checker"]
    assert [bool(e.actions.escalate) for e in checker] == [False, False, True]


async def test_max_iterations_and_an_answer_without_code() -> None:
    run = await run_correct(context=SALES, turns=["Total?"], max_iterations=2, script={
        "code_generator": ["The total is 200.", repl("print('still working')")],
        "result_formatter": ["No answer was found."]})
    stored = (await run.stored_session()).state
    assert stored[keys.ITERATION_HISTORY][0]["error"] == NO_CODE
    assert stored[keys.STATUS] == keys.STATUS_MAX_ITERATIONS
    assert stored.get(keys.FINAL_ANSWER) is None
    assert "without a final answer (status: max_iterations)" in run.llm.seen("result_formatter")[0].system_instruction


async def test_previews_are_bounded_with_a_cut_marker() -> None:
    run = await run_correct(context="x", turns=["Print a lot."], script={
        "code_generator": [repl("print('a' * 3000 + 'b' * 3000)\nFINAL('done')")],
        "result_formatter": ["Done."]})
    stored = (await run.stored_session()).state
    result = stored[keys.EXECUTION_RESULT]
    assert result == "a" * 1000 + "\n... [4001 characters omitted] ...\n" + "b" * 999 + "\n"
    assert stored[keys.ITERATION_HISTORY][0]["stdout"] == result
    assert preview("short", 2000) == "short"
    assert preview("a" * 10, 4, total=50) == "aaaa\n... [46 characters omitted] ...\n"


@pytest.mark.slow
async def test_timeout_stops_the_code_and_the_next_block_runs() -> None:
    run = await run_correct(context="x", turns=["Loop."], executor_timeout_s=2.5, script={
        "code_generator": [repl("while True:\n    pass"), repl("FINAL('recovered')")],
        "result_formatter": ["Recovered."]})
    history = (await run.stored_session()).state[keys.ITERATION_HISTORY]
    assert history[0]["error"].startswith("TimeoutError: the code ran longer than 2.5s")
    assert history[1]["error"] is None


async def test_the_repl_sees_only_its_allowed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABRICKS_TOKEN", "canary-dapi-0000")
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    code = "import os, json\nFINAL(json.dumps(sorted(os.environ)))"
    run = await run_correct(context="x", turns=["Env?"], script={
        "code_generator": [repl(code)], "result_formatter": ["Env."]})
    names = set(json.loads((await run.stored_session()).state[keys.FINAL_ANSWER]))
    assert "DATABRICKS_TOKEN" not in names
    assert names <= {"PATH", "HOME", "LANG", "PYTHONPATH", "PYTHONIOENCODING", "GOOGLE_API_KEY",
                     "GOOGLE_GEMINI_BASE_URL", "RLM_SUBLM_MODEL", "LC_CTYPE"}


TWO_TURNS = {
    "code_generator": [repl(TOTAL_CODE), repl("print(len(context['sales']))"), repl("n = len(context['sales'])")],
    "result_formatter": ["The total sales amount is 200.", "I could not finish counting."],
}
"""Turn 1 ends with FINAL; turn 2 runs out of iterations (max_iterations=2) without one."""


async def test_two_turns_flags_cleared_by_an_event() -> None:
    run = await run_correct(context=SALES, turns=["Total?", "How many sales?"], max_iterations=2,
                            script=TWO_TURNS)
    first_of_turn_2 = run.turns[1][0]
    assert first_of_turn_2.author == "context_loader"
    assert dict(first_of_turn_2.actions.state_delta) == {
        keys.FINAL_ANSWER: None, keys.STATUS: None, keys.ITERATION_HISTORY: [], keys.ITERATION: 0}
    stored = (await run.stored_session()).state
    assert stored[keys.FINAL_ANSWER] is None
    assert stored[keys.STATUS] == keys.STATUS_MAX_ITERATIONS
    assert [h["iteration"] for h in stored[keys.ITERATION_HISTORY]] == [1, 2]
    assert stored[keys.FORMATTED_ANSWER] == "I could not finish counting."
    # Turn 2's generator started from a clean history, not turn 1's.
    assert "(No previous iterations in this turn.)" in run.llm.seen("code_generator")[1].system_instruction
    assert run.probe.states[-1] == stored, "what the run acted on is what the service stored"
    # Consumed markers of both turns stay.
    artifacts = {k: v for k, v in stored.items() if k.startswith(keys.ARTIFACT_PREFIX)}
    assert list(artifacts.values()) == [keys.CONSUMED] * 3



def test_an_answer_that_writes_no_code_does_not_run_the_previous_code_again(tmp_path: Path) -> None:
    """Found by `rlm-conformance explore` (stage_gating): a code_generator answer with no content writes no
    generated_code, and code_executor re-ran the previous turn's code from stale state."""
    from harness.llm.modes import LlmMode
    from harness.run.runner import RunOptions, run_scenario
    from harness.scenario.loader import parse_scenario

    root = Path(__file__).resolve().parents[2] / "examples" / "seed004_rlm"
    text = f"""
name: stale_code_after_an_empty_answer
description: Turn 1's first answer is empty; the executor must not run turn 0's code again.
target: examples.seed004_rlm.agent:app
profile: {root / "rlm-profile.yaml"}
max_iterations: 2
sessions:
  - user: u1
    turns:
      - user: first
      - user: second
script:
  code_generator:
    - text: "```repl\\nprint('turn zero ran')\\nFINAL(1)\\n```"
    - fault: empty
    - text: "```repl\\nFINAL(2)\\n```"
  result_formatter:
    - text: one
    - text: two
"""
    scenario = parse_scenario(text, path=str(tmp_path / "s.yaml"), stem="stale_code_after_an_empty_answer")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path))
    assert result.check("stage_gating").status.value == "pass", result.check("stage_gating").evidence
    ran = [e for e in result.trace.events if e.author == "code_executor" and e.emitted_delta]
    assert [e.turn for e in ran] == [0, 1]  # one execution per turn: the fresh code only
