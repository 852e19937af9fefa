"""Hand-built traces for testing checks: a builder that behaves like the reference target.

``TraceBuilder`` records what the reference agent would: events with their
emitted and appended deltas, the rows the Delta session service would persist
(temp: stripped, None deleting), model requests and responses, registry
records, live-state records and one persisted snapshot per turn. A test builds
a correct trace, then breaks exactly one thing and asserts the check names it::

    b = TraceBuilder()
    b.start_turn("Total sales?")
    b.delegate()
    b.execute()
    b.process("The total is 200.")
    b.exit_loop()
    b.end_turn()
    trace = b.build()
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from reference_agent import state_contract as keys

from harness.scenario.models import Scenario
from harness.targets.profile import TargetProfile
from reference_agent.conformance.profile import reference_profile
from harness.trace.model import (AgentInfo, CodePartRecord, EventRecord, ExecutionRecord, LiveStateRecord, LlmRequestRecord,
                           LlmResponseRecord, PersistedEventRow, PersistedSnapshot, Trace, TurnOutcome, TurnRecord)
from harness.checks.base import CheckContext

REFERENCE_PLUGINS = ("RlmContextInjectionPlugin", "RlmStageTrackingPlugin")
ANALYST_BASE_PROMPT = "You are a data analyst working in a Python REPL.\n"
PROCESSOR_PROMPT = "You summarise the output of Python code that was just executed.\n"


def reference_agents(profile: TargetProfile) -> list[AgentInfo]:
    """The reference agent's tree under the profile's names (roles the profile leaves unmapped left out)."""
    agents = [
        AgentInfo(name=profile.loop_agent or "", kind="LoopAgent", llm_agent=False),
        AgentInfo(name=profile.analyst or "", kind="LlmAgent", llm_agent=True, parent=profile.loop_agent, instruction_kind="provider",
                  tools=[t for t in (profile.delegate_tool, profile.exit_tool) if t]),
        AgentInfo(name=profile.job_builder or "", kind="JobBuilderAgent", llm_agent=False, parent=profile.loop_agent),
        AgentInfo(name=profile.results_processor or "", kind="StageGatedLlmAgent", llm_agent=True, parent=profile.loop_agent,
                  output_key=profile.summary_key, instruction_kind="provider"),
    ]
    return [a for a in agents if a.name]


def _invocation(label: str) -> str:
    return "e-" + hashlib.sha1(label.encode()).hexdigest()[:12]


def _is_scoped(key: str, prefix: str) -> bool:
    return key.startswith(prefix)


class TraceBuilder:
    """Builds a ``Trace`` step by step, the way the reference target would produce it."""

    def __init__(self, *, scenario: str = "unit", profile: TargetProfile | None = None,
                 plugins: Iterable[str] = REFERENCE_PLUGINS, agents: Iterable[AgentInfo] | None = None) -> None:
        self.profile = profile or reference_profile().model_copy(update={"none_semantics": "delete"})
        self.trace = Trace(scenario=scenario, target="reference", llm_mode="scripted",
                           session_service="DeltaSessionService", plugins=list(plugins),
                           agents=list(agents) if agents is not None else reference_agents(self.profile))
        self._session_state: dict[str, dict[str, Any]] = {}
        self._app_state: dict[str, Any] = {}
        self._user_state: dict[str, dict[str, Any]] = {}
        self._rows: dict[str, list[PersistedEventRow]] = {}
        self.live: dict[str, Any] = {}
        self.turn = -1
        self.session_id = ""
        self.user_id = ""
        self.invocation_id = ""
        self._artifact: ExecutionRecord | None = None

    # --- storage simulation ----------------------------------------------------

    @property
    def _store_none(self) -> bool:
        return self.profile.none_semantics == "store"

    def _apply(self, target: dict[str, Any], key: str, value: Any) -> None:
        if value is None and not self._store_none:
            target.pop(key, None)
        else:
            target[key] = value

    def _persist(self, delta: dict[str, Any]) -> None:
        session = self._session_state.setdefault(self.session_id, {})
        user = self._user_state.setdefault(self.user_id, {})
        for key, value in delta.items():
            if _is_scoped(key, "app:"):
                self._apply(self._app_state, key[len("app:"):], value)
            elif _is_scoped(key, "user:"):
                self._apply(user, key[len("user:"):], value)
            else:
                self._apply(session, key, value)

    def persisted_view(self) -> dict[str, Any]:
        """What a fresh get_session() returns: session state with app:/user: merged back."""
        view = dict(self._session_state.get(self.session_id, {}))
        view.update({f"app:{k}": v for k, v in self._app_state.items()})
        view.update({f"user:{k}": v for k, v in self._user_state.get(self.user_id, {}).items()})
        return view

    # --- generic records ---------------------------------------------------------

    def event(self, author: str, *, delta: dict[str, Any] | None = None, text: str = "",
              function_calls: Iterable[str] = (), function_responses: Iterable[str] = (), escalate: bool = False,
              transfer_to_agent: str | None = None, invocation_id: str | None = None, persist: bool = True,
              appended_delta: dict[str, Any] | None = None,
              code_parts: Iterable[CodePartRecord] = ()) -> EventRecord:
        """Append one event: recorded, applied to the live state and (unless ``persist=False``) stored."""
        delta = dict(delta or {})
        if appended_delta is None:
            appended_delta = {k: v for k, v in delta.items() if not k.startswith("temp:")}
        record = EventRecord(
            index=len(self.trace.events), session_id=self.session_id, user_id=self.user_id, turn=self.turn,
            invocation_id=invocation_id or self.invocation_id, author=author, emitted_delta=delta,
            appended_delta=dict(appended_delta), escalate=escalate, transfer_to_agent=transfer_to_agent,
            function_calls=list(function_calls), function_responses=list(function_responses), text=text,
            code_parts=list(code_parts),
        )
        self.trace.events.append(record)
        for key, value in delta.items():
            self._apply(self.live, key, value)
        if persist:
            self._persist(appended_delta)
            rows = self._rows.setdefault(self.session_id, [])
            kept = appended_delta if self._store_none else {k: v for k, v in appended_delta.items() if v is not None}
            deleted = [] if self._store_none else [k for k, v in appended_delta.items() if v is None]
            rows.append(PersistedEventRow(seq=len(rows) + 1, author=author, invocation_id=record.invocation_id,
                                          state_delta=dict(kept), deleted_keys=deleted))
        return record

    def request(self, agent: str, *, system_instruction: str | None = None, contents_text: str = "",
                response_text: str = "", response_calls: Iterable[str] = (), error: str | None = None,
                tools: Iterable[str] = (), answered: bool = True) -> LlmRequestRecord:
        """One model request of ``agent`` and (unless the call failed: ``answered=False``) its response.

        Like the recorder, responses are numbered by their own counter.
        """
        if system_instruction is None:
            system_instruction = self.analyst_prompt() if agent == self.profile.analyst else PROCESSOR_PROMPT
        index = len(self.trace.llm_requests)
        request = LlmRequestRecord(index=index, agent=agent, turn=self.turn, invocation_id=self.invocation_id,
                                   system_instruction=system_instruction, contents_text=contents_text,
                                   tools=list(tools))
        self.trace.llm_requests.append(request)
        if answered:
            self.trace.llm_responses.append(LlmResponseRecord(
                index=len(self.trace.llm_responses), agent=agent, text=response_text,
                function_calls=list(response_calls), error=error))
        return request

    def analyst_prompt(self) -> str:
        """The reference instruction provider: the base prompt plus the durable summary, when there is one."""
        summary = self.live.get(self.profile.summary_key)
        return ANALYST_BASE_PROMPT + (f"\n## Results of your last delegation\n{summary}\n" if summary
                                      else "\n## Results of your last delegation\n(none yet)\n")

    # --- the reference agent's steps -------------------------------------------------

    def start_turn(self, message: str = "go", *, session_id: str = "s1", user_id: str = "user_1",
                   cleanup: bool = True) -> None:
        """A new user turn: run_conversation's cleanup event (if flags are set), then the user event."""
        self.turn += 1
        self.session_id, self.user_id = session_id, user_id
        self.trace.turns.append(TurnRecord(turn=self.turn, session_id=session_id, user_id=user_id, message=message,
                                           outcome=TurnOutcome()))
        stale = {k: None for k in self.profile.stale_flag_keys if k in self._session_state.get(session_id, {})}
        self.live = self.persisted_view()
        if cleanup and stale and self.profile.run_conversation_author is not None:
            self.event(self.profile.run_conversation_author, delta=stale,
                       invocation_id=_invocation(f"cleanup-{self.turn}"))
        self.invocation_id = _invocation(f"{session_id}-{self.turn}")
        self.event("user", text=message)

    def delegate(self, code: str = "print(1)", instruction: str = "Report the result.") -> ExecutionRecord:
        p = self.profile
        iteration = int(self.live.get(p.iteration_key, 0)) + 1
        artifact = f"art{len(self.trace.executions) + 1:03d}"
        self.request(p.analyst, response_calls=[p.delegate_tool], tools=[p.delegate_tool, p.exit_tool])
        self.event(p.analyst, function_calls=[p.delegate_tool])
        self.event(p.analyst, function_responses=[p.delegate_tool], delta={
            p.iteration_key: iteration, keys.LAST_ARTIFACT_ID: artifact, keys.ARTIFACT_ID: artifact,
            keys.ACTIVE_ARTIFACT_ID: artifact, keys.CODE: f"/vol/artifacts/{artifact}.py",
            keys.SUBLM_INSTRUCTION: instruction, keys.STAGE: keys.STAGE_DELEGATED,
        })
        record = ExecutionRecord(artifact_id=artifact, session_id=self.session_id, iteration=iteration,
                                 status="pending")
        self.trace.executions.append(record)
        self._artifact = record
        return record

    def execute(self, *, status: str = "success", stdout: str = "1\n", final_answer: str | None = None) -> EventRecord:
        record = self._artifact
        iteration = record.iteration if record else 0
        path = f"/vol/artifacts/result_{self.session_id}_iter{iteration}.json"
        success = status == "success"
        delta: dict[str, Any] = {
            keys.STAGE: keys.STAGE_EXECUTED, keys.RUN_ID: self.session_id, keys.EXECUTION_SUCCESS: success,
            keys.EXECUTION_STATUS: status, keys.EXECUTION_STDOUT: stdout, keys.EXECUTION_STDERR: "",
            keys.STDOUT_TRUNCATED: False, keys.STDERR_TRUNCATED: False, keys.RESULT_JSON_PATH: path,
            keys.LAST_RESULT_JSON_PATH: path, keys.LAST_EXECUTION_SUCCESS: success,
        }
        if final_answer is not None:
            delta[keys.FINAL_FOUND] = True
            delta[keys.PENDING_FINAL_ANSWER] = final_answer
        if record is not None:
            record.status, record.result_status, record.result_json_path = "executed", status, path
            record.stdout_bytes, record.final_answer = len(stdout.encode()), final_answer
        return self.event(self.profile.job_builder, text=f"Job_B run iteration {iteration}: {status}", delta=delta)

    def process(self, summary: str = "It printed 1.", *, consume: bool = True) -> EventRecord:
        """results_processor's model answers ``summary`` (its output_key), then the stage plugin closes the stage."""
        p = self.profile
        stdout = self.live.get(keys.EXECUTION_STDOUT, "")
        self.request(p.results_processor, contents_text=f"EXECUTION RESULTS\n--- stdout ---\n{stdout}",
                     response_text=summary)
        answer = self.event(p.results_processor, text=summary, delta={p.summary_key: summary})
        plugin: dict[str, Any] = {keys.STAGE: keys.STAGE_PROCESSED}
        escalate = bool(self.live.get(keys.FINAL_FOUND))
        if escalate:
            plugin[p.final_answer_key] = self.live.get(keys.PENDING_FINAL_ANSWER)
            plugin[p.termination_key] = "final_answer"
        self.event(p.results_processor, delta=plugin, escalate=escalate)
        if consume and self._artifact is not None:
            self._artifact.status = "consumed"
        return answer

    def analyst_text(self, text: str = "Thinking it over.") -> EventRecord:
        self.request(self.profile.analyst, response_text=text)
        return self.event(self.profile.analyst, text=text)

    def exit_loop(self) -> EventRecord:
        p = self.profile
        self.request(p.analyst, response_calls=[p.exit_tool])
        self.event(p.analyst, function_calls=[p.exit_tool])
        return self.event(p.analyst, function_responses=[p.exit_tool], escalate=True,
                          delta={keys.EXIT_REQUESTED: True, p.termination_key: "exit_loop"})

    def end_turn(self, *, error: str | None = None, run_error: str | None = None,
                 outcome: TurnOutcome | None = None, fold_history: bool = True) -> TurnRecord:
        """The invocation ends (live-state record), run_conversation writes the outcome and (``fold_history``, when
        the profile maps history_key) folds the turn into the user's history, storage is read back."""
        p = self.profile
        self.trace.live_states.append(LiveStateRecord(session_id=self.session_id, turn=self.turn,
                                                      invocation_id=self.invocation_id, state=dict(self.live),
                                                      persisted_state=self.persisted_view()))
        stored = self._session_state.get(self.session_id, {})
        reason = stored.get(p.termination_key) if p.termination_key else None
        marker = _invocation(f"outcome-{self.turn}")
        driver = p.run_conversation_author is not None and p.termination_key is not None
        if error is not None:
            reason = "model_error"
            if driver:
                self.event(p.run_conversation_author, invocation_id=marker, delta={
                    p.termination_key: reason, keys.FATAL_ERROR: True, keys.FATAL_ERROR_MSG: error})
        elif reason is None and driver:
            reason = "max_iterations"
            self.event(p.run_conversation_author, invocation_id=marker, delta={p.termination_key: reason})
        delegations = (sum(e.function_calls.count(p.delegate_tool) for e in self.trace.events if e.turn == self.turn)
                       if p.delegate_tool else None)
        turn = self.trace.turns[-1]
        final = stored.get(p.final_answer_key) if p.final_answer_key else None
        turn.outcome = outcome or TurnOutcome(termination=p.termination_name(reason), final_answer=final,
                                              delegations=delegations, error=error)
        turn.run_error = run_error
        if fold_history and driver and p.history_key is not None and run_error is None:
            history = self.persisted_view().get(p.history_key) or []
            entry = {"session": self.session_id, "question": turn.message, "termination": turn.outcome.termination}
            self.event(p.run_conversation_author, invocation_id=_invocation(f"history-{self.turn}"),
                       delta={p.history_key: [*history, entry]})
        self.snapshot()
        return turn

    def snapshot(self) -> PersistedSnapshot:
        state = dict(self._session_state.get(self.session_id, {}))
        snapshot = PersistedSnapshot(
            session_id=self.session_id, user_id=self.user_id, turn=self.turn, session_state=state,
            app_state=dict(self._app_state), user_state=dict(self._user_state.get(self.user_id, {})),
            events=[row.model_copy() for row in self._rows.get(self.session_id, [])], source="rows",
            state_bytes=len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()),
        )
        self.trace.persisted.append(snapshot)
        return snapshot

    def build(self) -> Trace:
        return self.trace.model_copy(deep=True)


# --- ready-made traces and contexts -----------------------------------------------


def happy_trace(*, summary: str = "It printed 1.") -> Trace:
    """One turn: delegate, execute, process, exit — everything the checks want."""
    b = TraceBuilder()
    b.start_turn("What does the code print?")
    b.delegate()
    b.execute()
    b.process(summary)
    b.exit_loop()
    b.end_turn()
    return b.build()


def two_turn_trace() -> Trace:
    """Two turns of one session, each with one delegation; turn 1 starts with a cleanup event."""
    b = TraceBuilder()
    b.start_turn("first")
    b.delegate()
    b.execute()
    b.process("It printed 1.")
    b.exit_loop()
    b.end_turn()
    b.start_turn("second")
    b.delegate("print(2)")
    b.execute(stdout="2\n")
    b.process("It printed 2.")
    b.exit_loop()
    b.end_turn()
    return b.build()


def make_scenario(**expect: Any) -> Scenario:
    """A minimal valid scenario; keyword arguments go into its ``expect`` block."""
    return Scenario.model_validate({
        "name": "unit", "description": "A hand-built trace.", "sessions": [{"id": "s1", "turns": [{"user": "go"}]}],
        "script": {}, "expect": expect,
    })


def make_context(trace: Trace, *, scenario: Scenario | None = None,
                 profile: TargetProfile | None = None) -> CheckContext:
    return CheckContext(trace=trace, scenario=scenario or make_scenario(), profile=profile or reference_profile().model_copy(update={"none_semantics": "delete"}))
