"""The scenarios in ``scenarios/`` are well formed, and a few get assertions the generic checks cannot express
(user:/app: scope across sessions); replay is shown to be deterministic by replaying twice.

That every scenario replays on the reference agent with no failed check, no harness error and its expectations
compared is tests/test_conformance.py (each scenario once, through the pytest plugin). Replay is offline
(cassettes in ``cassettes/``, network refused).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from harness.llm.modes import LlmMode
from harness.result import ScenarioResult
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.trace.model import Trace

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
CASSETTES = ROOT / "cassettes"
SCENARIO_FILES = sorted(SCENARIOS.glob("*.yaml"))
WORK_DIR = re.compile(r"\S*rlm-conformance-[^/\s]+")


@functools.cache
def replay(name: str) -> ScenarioResult:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    return run_scenario(scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=CASSETTES))


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIO_FILES) >= 16, [p.stem for p in SCENARIO_FILES]


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[p.stem for p in SCENARIO_FILES])
def test_scenario_file_is_well_formed(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert path.read_text(encoding="utf-8").splitlines()[0] == "# yaml-language-server: $schema=./scenario.schema.json"
    assert scenario.description.strip() and scenario.tags
    assert scenario.expect.termination is not None and scenario.expect.executions is not None
    if scenario.concurrent is not None:  # run skips it (its runners run at once under crash): no cassette to replay
        return
    assert (CASSETTES / f"{path.stem}.yaml").exists(), f"no reference cassette for {path.stem}"
    assert (CASSETTES / "legacy" / f"{path.stem}.yaml").exists(), f"no legacy cassette for {path.stem}"


def _final_snapshot(trace: Trace, session_index: int):
    sessions = list(dict.fromkeys(t.session_id for t in trace.turns))
    snapshot = trace.final_persisted(sessions[session_index])
    assert snapshot is not None
    return snapshot


HISTORY = "rlm:history"  # user:rlm:history as stored in the user-state row


def _without_history(user_state: dict) -> dict:
    return {k: v for k, v in user_state.items() if k != HISTORY}


def test_user_state_reaches_the_users_second_session() -> None:
    trace = replay("user_state_two_sessions").trace
    second = _final_snapshot(trace, 1)
    assert _without_history(second.user_state) == {"currency": "EUR", "preferred_regions": ["north"]}
    assert "draft_note" in _final_snapshot(trace, 0).session_state
    assert "draft_note" not in second.session_state
    # the second session's agents saw the user: keys in their live state
    live = [r for r in trace.live_states if r.session_id == second.session_id]
    assert live and all(r.state.get("user:currency") == "EUR" for r in live)


def test_app_state_is_shared_by_users_but_user_state_is_not() -> None:
    trace = replay("app_state_two_users").trace
    first, second = _final_snapshot(trace, 0), _final_snapshot(trace, 1)
    assert first.user_id != second.user_id
    assert first.app_state == second.app_state == {"fiscal_year": 2024}
    assert _without_history(first.user_state) == {"currency": "EUR"} and _without_history(second.user_state) == {}
    # each user's history holds their own turn only
    assert [e["session"] for e in first.user_state[HISTORY]] == [first.session_id]
    assert [e["session"] for e in second.user_state[HISTORY]] == [second.session_id]
    live = [r for r in trace.live_states if r.session_id == second.session_id]
    assert live and all(r.state.get("app:fiscal_year") == 2024 and "user:currency" not in r.state for r in live)


def test_failed_turn_leaves_a_reloadable_session() -> None:
    trace = replay("model_500_retries_exhausted").trace
    [turn] = trace.turns
    assert turn.run_error is None and turn.outcome.termination == "model_error"
    snapshot = trace.final_persisted(turn.session_id)
    # the user message, the outcome event, the history event
    assert snapshot.source == "rows" and [r.author for r in snapshot.events] == ["user", "run_conversation",
                                                                                 "run_conversation"]
    assert snapshot.user_state["rlm:history"][-1]["termination"] == "model_error"


def test_huge_stdout_stays_in_the_volume() -> None:
    result = replay("huge_stdout")
    [execution] = result.trace.executions
    assert execution.stdout_bytes is not None and execution.stdout_bytes > 4_000_000
    assert max(s.state_bytes for s in result.trace.persisted) < 16_384


def _shape(trace: Trace) -> tuple:
    events = [(e.turn, e.author, sorted(e.emitted_delta), e.function_calls, e.text) for e in trace.events]
    # the artifact id is a fresh uuid and the work folder a fresh temporary directory on every run
    # rlm:metrics holds measured execution times, which differ between any two runs
    states = [{k: WORK_DIR.sub("<home>", v) if isinstance(v, str) else v for k, v in p.session_state.items()
               if k not in ("rlm:last_artifact_id", "rlm:metrics")} for p in trace.persisted]
    requests = [(r.agent, r.turn, r.contents_text.count("\n")) for r in trace.llm_requests]
    return events, states, requests


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llm_query_batched", "multiple_delegations", "model_429_then_success"])
def test_replay_is_deterministic(name: str) -> None:
    first = replay(name)
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    second = run_scenario(scenario, RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=CASSETTES))
    assert second.error is None
    assert _shape(first.trace) == _shape(second.trace)
    assert [(c.name, c.status) for c in first.checks] == [(c.name, c.status) for c in second.checks]


@pytest.mark.slow
def test_long_history_is_cut_to_the_budget_oldest_first_with_the_summary_kept() -> None:
    trace = replay("history_long_budget").trace
    budget = load_scenario(SCENARIOS / "history_long_budget.yaml").limits.context_budget_tokens
    assert trace.token_counts and all(len(c.text) > budget for c in trace.token_counts)  # counted only when needed
    *_, before_summary, after_summary = trace.requests_of("databricks_analyst")
    for request in (before_summary, after_summary):
        assert "left out to fit the context budget" in request.system_instruction
        assert "Which regions appear in the sales data?" not in request.system_instruction  # the oldest went first
        assert "Who owns the sales data set?" in request.system_instruction  # the newest stayed
    assert "The code printed 245" in after_summary.system_instruction  # the newest summary is always kept
    assert "Which currency are the sales amounts in?" in before_summary.system_instruction
    assert "Which currency are the sales amounts in?" not in after_summary.system_instruction  # made room for it


@pytest.mark.slow
def test_history_and_snippets_cross_sessions_in_their_scopes() -> None:
    carried = replay("history_two_sessions").trace.requests_of("databricks_analyst")
    assert "What is the total sales amount?" in carried[2].system_instruction
    isolated = replay("history_second_user_isolated").trace
    second_user = [r for r in isolated.requests_of("databricks_analyst") if r.turn == 1]
    assert second_user and all("confidential" not in r.system_instruction for r in second_user)
    shared = replay("app_snippets_shared").trace
    assert all("sales_by_region" in r.system_instruction for r in shared.requests_of("databricks_analyst")
               if r.turn == 1)
