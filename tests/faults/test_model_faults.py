"""Model faults served by the scripted endpoint: what the reference agent does on each, proven on replay.

Every fault has a scenario in ``scenarios/`` (recorded with ``rlm-conformance record --scenario NAME``
against the scripted endpoint, replayed offline here). For each one the tests show: the replay has no
failed check; the turn ends the documented way; the session reloads with ``get_session`` and every event
the runner appended has its row in storage; the cassette holds the fault; the reports say what happened.

Documented behaviour (client: ADK's ``Gemini`` over google-genai, async over aiohttp, with
``RETRY_OPTIONS`` = 3 attempts, exponential backoff 0.05-0.2 s on HTTP 429/500/503, and a client timeout
``MODEL_TIMEOUT_S`` = 2 s in scripted and replay mode, both in ``harness/run/options.py``):

================  ===========================  =====================  ===========================================  =============
fault             scenario                     where                  what happens                                 termination
================  ===========================  =====================  ===========================================  =============
http_429          model_429_then_success       analyst, 1st call      retried with backoff; the retry is answered  exit_loop
 + Retry-After                                                        and the run goes on. Retry-After and the
                                                                      RetryInfo detail are *not* honoured: the
                                                                      wait is RETRY_OPTIONS' own schedule.
http_500 x3       model_500_retries_exhausted  analyst, 1st call      retried; after 3 attempts the ServerError    model_error
                                                                      ends the turn cleanly: run_conversation
                                                                      appends one outcome event
                                                                      (rlm:termination_reason=model_error,
                                                                      rlm:fatal_error, rlm:fatal_error_msg).
http_503 x2       model_503_then_success       results_processor      retried with backoff; the 3rd attempt's      exit_loop
                                                                      summary is persisted as usual.
malformed         model_malformed_json         analyst, 2nd call      200 with a non-JSON body: google-genai       model_error
                                               (after a delegation)   raises JSONDecodeError, which is not an
                                                                      HTTP status, so no retry; clean failure as
                                                                      for 500. The delegation's summary and
                                                                      rlm:iteration stay persisted.
truncated         model_truncated_body         analyst, 1st call      200 with the JSON cut in half: as            model_error
                                                                      malformed (JSONDecodeError, no retry).
slow (2.5 s)      model_slow_timeout           analyst, 1st call      the client gives up after 2 s: aiohttp       model_error
                                                                      raises TimeoutError; google-genai retries
                                                                      httpx timeouts but not aiohttp's, so no
                                                                      retry; clean failure ("TimeoutError: ").
                                                                      The cassette holds a 408 interaction marked
                                                                      x-rlm-conformance-replay: client-timeout;
                                                                      replay raises TimeoutError on it.
empty             model_empty_candidates       analyst, 2nd call      ADK treats "no candidates, no prompt         exit_loop
                                                                      feedback" as an empty successful answer
                                                                      (logs a warning): the analyst's event has
                                                                      no content, job_builder and
                                                                      results_processor stay gated, and the
                                                                      loop's next iteration asks again (one of
                                                                      max_iterations spent, no error).
safety            model_safety_block           analyst, 2nd call      ADK turns finishReason SAFETY into an        model_error
                                                                      event with error_code SAFETY and no
                                                                      content. A block is not transient, so the
                                                                      reference agent's RlmModelGuardPlugin
                                                                      ends the turn: a clean failure naming the
                                                                      reason (see SAFETY_NOTE).
================  ===========================  =====================  ===========================================  =============

The empty and safety faults hit the analyst's call *after* a delegation: on its first call they make the
``summary_reaches_prompt`` check pair the analyst's requests with the wrong events (``request_positions``
in ``harness/checks/timeline.py`` only counts events with text or function calls as answers), a false
failure reported separately.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from harness.checks import Status
from harness.llm.client_timeouts import TIMEOUT_HEADER, TIMEOUT_MARK
from harness.llm.modes import LlmMode
from harness.report.write import write_reports
from harness.result import RunReport, ScenarioResult
from harness.run.runner import MODEL_TIMEOUT_S, RETRY_OPTIONS, RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from harness.trace.model import Trace

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
CASSETTES = ROOT / "cassettes"

SAFETY_NOTE = ("A SAFETY (or other block) finish reason is not transient: asking the same model the same thing again "
               "is blocked again, until max_iterations. So the agent ends the turn like a model error "
               "(termination model_error, rlm:fatal_error_msg naming the finish reason).")


@dataclass(frozen=True)
class Documented:
    termination: str
    executions: int
    error: str | None  # a substring of the turn's error; None: the turn has no error
    fault_statuses: dict[int, int]  # HTTP status -> how many interactions of the cassette answered with it
    fault_body: str | None = None  # what the faulty 200 answer's body shows (malformed, truncated, empty, safety)


FAULTS: dict[str, Documented] = {
    "model_429_then_success": Documented("exit_loop", 1, None, {429: 1}),
    "model_500_retries_exhausted": Documented("model_error", 0, "500 INTERNAL", {500: 3}),
    "model_503_then_success": Documented("exit_loop", 1, None, {503: 2}),
    "model_malformed_json": Documented("model_error", 1, "JSONDecodeError", {}, "not json"),
    "model_truncated_body": Documented("model_error", 0, "JSONDecodeError", {}, "not json"),
    "model_slow_timeout": Documented("model_error", 0, "TimeoutError", {408: 1}),
    "model_empty_candidates": Documented("exit_loop", 1, None, {}, "no candidates"),
    "model_safety_block": Documented("model_error", 1, "finish reason SAFETY", {}, "SAFETY"),
}
NAMES = sorted(FAULTS)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory):
    """Replay each fault scenario once per module, keeping its folder (DuckDB file) for reloading."""
    runs: dict[str, tuple[ScenarioResult, Path]] = {}

    def get(name: str) -> tuple[ScenarioResult, Path]:
        if name not in runs:
            home = tmp_path_factory.mktemp(name)
            options = RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=CASSETTES, work_dir=home)
            runs[name] = (run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"), options), home)
        return runs[name]

    return get


def test_every_scripted_fault_kind_has_a_scenario() -> None:
    from typing import get_args

    from harness.scenario.script import FaultKind

    covered = {step.fault for name in NAMES for steps in load_scenario(SCENARIOS / f"{name}.yaml").script.values()
               for step in steps if hasattr(step, "fault")}
    assert covered == set(get_args(FaultKind))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_fault_scenario_replays_with_no_failed_check(replayed, name: str) -> None:
    result, _ = replayed(name)
    assert result.error is None, result.error
    failed = [f"{c.name}: {c.explanation} | {' | '.join(c.evidence[:3])}" for c in result.checks if c.failed]
    assert not failed, "\n".join(failed)
    assert result.check("scenario_expectations").status is Status.PASS


@pytest.mark.parametrize("name", NAMES)
def test_turn_ends_the_documented_way(replayed, name: str) -> None:
    result, _ = replayed(name)
    documented = FAULTS[name]
    [turn] = result.trace.turns
    assert turn.run_error is None  # never an exception out of the agent's runner
    assert turn.outcome.termination == documented.termination
    assert len(result.trace.executions) == documented.executions
    if documented.error is None:
        assert turn.outcome.error is None
    else:
        assert documented.error in (turn.outcome.error or "")
        final = result.trace.final_persisted(turn.session_id)
        assert final.session_state["rlm:termination_reason"] == "model_error"
        assert final.session_state["rlm:fatal_error"] is True
        assert documented.error in final.session_state["rlm:fatal_error_msg"]
        # one outcome event, appended after the failure, carries the flags
        outcome_events = [e for e in result.trace.events if "rlm:fatal_error" in e.appended_delta]
        assert [e.author for e in outcome_events] == ["run_conversation"]


@pytest.mark.parametrize("name", NAMES)
def test_cassette_holds_the_fault(name: str) -> None:
    documented = FAULTS[name]
    interactions = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text(encoding="utf-8"))["interactions"]
    statuses = Counter(i["response"]["status"]["code"] for i in interactions)
    assert {code: statuses[code] for code in documented.fault_statuses} == documented.fault_statuses
    assert set(statuses) <= {200, *documented.fault_statuses}
    bodies = [i["response"]["body"]["string"] for i in interactions if i["response"]["status"]["code"] == 200]
    parsed = []
    for body in bodies:
        try:
            parsed.append(json.loads(body))
        except ValueError:
            parsed.append(None)
    if documented.fault_body == "not json":
        assert parsed.count(None) == 1
    elif documented.fault_body == "no candidates":
        assert sum(1 for p in parsed if p is not None and "candidates" not in p) == 1
    elif documented.fault_body == "SAFETY":
        assert sum(1 for p in parsed if p and p.get("candidates", [{}])[0].get("finishReason") == "SAFETY") == 1
    else:
        assert None not in parsed
    if name == "model_slow_timeout":
        [timeout] = [i for i in interactions if i["response"]["status"]["code"] == 408]
        assert timeout["response"]["headers"][TIMEOUT_HEADER] == [TIMEOUT_MARK]


def _merged(state: dict, app: dict, user: dict) -> dict:
    return {**state, **{f"app:{k}": v for k, v in app.items()}, **{f"user:{k}": v for k, v in user.items()}}


def _appended(trace: Trace, session_id: str) -> list:
    return [e for e in sorted(trace.events, key=lambda e: e.index) if e.session_id == session_id and not e.partial]


@pytest.mark.parametrize("name", NAMES)
def test_every_appended_event_is_persisted(replayed, name: str) -> None:
    trace = replayed(name)[0].trace
    for session_id in dict.fromkeys(t.session_id for t in trace.turns):
        final = trace.final_persisted(session_id)
        assert final is not None and final.source == "rows"
        events = _appended(trace, session_id)
        assert [(e.invocation_id, e.author) for e in events] == [(r.invocation_id, r.author) for r in final.events]
        for event, row in zip(events, final.events):
            kept = {k: v for k, v in event.appended_delta.items() if not k.startswith("temp:")}
            stored = {**row.state_delta, **{k: None for k in row.deleted_keys}}
            assert stored == kept, (event.index, row.seq)


@pytest.mark.parametrize("name", NAMES)
def test_session_reloads_with_get_session(replayed, name: str) -> None:
    from reference_agent.config import AgentSettings
    from reference_agent.sessions.delta_session_service import DeltaSessionService
    from reference_agent.storage.duckdb_engine import DuckDBEngine

    result, home = replayed(name)
    settings = AgentSettings(home=home)
    engine = DuckDBEngine(settings.database_path)
    try:
        service = DeltaSessionService(engine)
        for turn in result.trace.turns:
            session = asyncio.run(service.get_session(app_name=settings.app_name, user_id=turn.user_id,
                                                      session_id=turn.session_id))
            assert session is not None, f"session {turn.session_id} does not reload"
            final = result.trace.final_persisted(turn.session_id)
            assert dict(session.state) == _merged(final.session_state, final.app_state, final.user_state)
            assert [(e.invocation_id, e.author) for e in session.events] == [
                (e.invocation_id, e.author) for e in _appended(result.trace, turn.session_id)]
            assert not [k for k in session.state if k.startswith("temp:")]
    finally:
        engine.close()


@pytest.mark.parametrize("name", NAMES)
def test_reports_say_what_happened(replayed, name: str, tmp_path: Path) -> None:
    result, _ = replayed(name)
    documented = FAULTS[name]
    report = RunReport(results=(result,), started_at="2026-01-01T00:00:00Z", machine="test", tool_version="0")
    written = write_reports(report, tmp_path)
    html = written["html"].read_text(encoding="utf-8")
    assert f"termination: {documented.termination}" in html
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    [entry] = data["results"]
    assert entry["ok"] is True and entry["error"] is None
    [turn] = entry["trace"]["turns"]
    assert turn["outcome"]["termination"] == documented.termination
    if documented.error is not None:
        assert documented.error in html and documented.error in turn["outcome"]["error"]
    assert "✅" in written["markdown"].read_text(encoding="utf-8")


def test_retry_after_is_not_honoured_the_backoff_is_retry_options() -> None:
    """A 429 asking for 5 s is retried after RETRY_OPTIONS' backoff (0.05-0.2 s), not after Retry-After."""
    import time

    from google.adk.models.llm_request import LlmRequest
    from google.genai import types

    from harness.llm.modes import endpoint_for
    from harness.llm.scripted_endpoint import ScriptedEndpoint
    from harness.scenario.script import FaultStep, TextStep

    script = {"analyst": [FaultStep(fault="http_429", retry_after=5), TextStep(text="after the retry")]}
    request = LlmRequest(model="gemini-2.5-flash", contents=[types.Content(role="user", parts=[types.Part(text="q")])],
                         config=types.GenerateContentConfig(
                             system_instruction='You are an agent. Your internal name is "analyst".'))

    async def ask(gemini) -> str:
        return "".join([r.content.parts[0].text async for r in gemini.generate_content_async(request)])

    with ScriptedEndpoint(script) as server:
        endpoint = endpoint_for(LlmMode.SCRIPTED, model="gemini-2.5-flash", scripted_base_url=server.base_url)
        started = time.perf_counter()
        answer = asyncio.run(ask(endpoint.gemini(retry_options=RETRY_OPTIONS,
                                                 timeout_s=MODEL_TIMEOUT_S[LlmMode.SCRIPTED])))
        elapsed = time.perf_counter() - started
    assert answer == "after the retry"
    assert [c.step.fault if hasattr(c.step, "fault") else "text" for c in server.calls] == ["http_429", "text"]
    assert elapsed < 2.5, f"the retry waited {elapsed:.1f} s: Retry-After is honoured now; update the docstring"


@pytest.mark.slow
def test_a_scenario_sets_its_own_model_timeout_and_a_delayed_call_is_answered(tmp_path: Path) -> None:
    """``limits.model_timeout_s`` is the client timeout of that scenario's model requests (how ``explore`` makes a
    generated timeout cheap): a ``slow`` fault past it ends the turn with TimeoutError, while a tool call delayed
    below it is answered and the run goes on. The mode's default (2 s) would have waited out the 0.8 s fault."""
    source = load_scenario(SCENARIOS / "model_slow_timeout.yaml")

    def scenario(script: dict[str, list[dict]], name: str):
        return source.model_validate({**source.model_dump(mode="json", exclude_defaults=True), "name": name,
                                      "limits": {"model_timeout_s": 0.4}, "expect": {}, "script": script})

    options = RunOptions(llm_mode=LlmMode.SCRIPTED, work_dir=tmp_path)
    timed_out = run_scenario(scenario({"databricks_analyst": [{"fault": "slow", "delay": 0.8}]}, "own_timeout"),
                             options)
    [turn] = timed_out.trace.turns
    assert turn.outcome.termination == "model_error"
    assert "TimeoutError" in (turn.outcome.error or "")

    delayed = run_scenario(scenario({"databricks_analyst": [
        {"call": "delegate_code_results", "delay": 0.2, "args": {"code": "print(1)", "instruction": "Print 1."}},
        {"call": "exit_loop", "text": "It printed 1."}], "results_processor": [{"text": "Printed 1."}]},
        "delayed_call"), replace(options, work_dir=tmp_path / "b"))
    [turn] = delayed.trace.turns
    assert turn.outcome.error is None, turn.outcome.error
    assert len(delayed.trace.executions) == 1
