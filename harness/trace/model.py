"""The trace of one scenario run: everything the checks, snapshots and reports read.

Data flows one way: the recorder fills a ``Trace``; checks, the snapshot
normaliser and the reporters only read it. Every record is plain data (JSON
serialisable through pydantic) so a trace can be written next to the report.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CodePartRecord(_Record):
    """One code part of an event's content: code handed to an executor, or what running it gave.

    ADK's code executors (``LlmAgent(code_executor=...)``) carry code as ``executable_code`` parts and its results as
    ``code_execution_result`` parts: a local executor in two events of the agent, a model-side one
    (``BuiltInCodeExecutor``) both in the model's own answer.
    """

    kind: Literal["executable_code", "code_execution_result"]
    code: str = Field(default="", description="The code (executable_code parts).")
    outcome: str | None = Field(default=None, description="OUTCOME_OK, OUTCOME_FAILED, ... (code_execution_result).")
    output: str = Field(default="", description="The result's output, its first characters (code_execution_result).")


class EventRecord(_Record):
    """One event as the runner appended it to the session service."""

    index: int = Field(description="Position among all events appended during the scenario.")
    seq: int = Field(default=-1, description="Position on the one clock shared with LLM requests (-1: unknown).")
    session_id: str
    user_id: str
    turn: int = Field(description="Index of the user turn (across the scenario) the event belongs to.")
    invocation_id: str
    author: str
    emitted_delta: dict[str, Any] = Field(description="state_delta as the writer emitted it (before the service trimmed temp:).")
    appended_delta: dict[str, Any] = Field(description="state_delta left on the event after append_event returned.")
    escalate: bool = False
    transfer_to_agent: str | None = None
    function_calls: list[str] = Field(default_factory=list)
    function_responses: list[str] = Field(default_factory=list)
    text: str = ""
    partial: bool = False
    code_parts: list[CodePartRecord] = Field(default_factory=list, description="The event's executable_code and "
                                             "code_execution_result parts, in content order.")
    artifact_statuses: dict[str, str] = Field(
        default_factory=dict, description="The target's artifact registry right after this event was appended "
                                          "(artifact id -> status), where the target lists executions cheaply.")


class LlmRequestRecord(_Record):
    """One request an agent sent to its model (as built by ADK, after all callbacks)."""

    index: int
    seq: int = Field(default=-1, description="Position on the one clock shared with events (-1: unknown).")
    agent: str
    turn: int
    invocation_id: str
    system_instruction: str
    contents_text: str
    tools: list[str] = Field(default_factory=list)


class LlmResponseRecord(_Record):
    index: int
    agent: str
    text: str
    function_calls: list[str] = Field(default_factory=list)
    error: str | None = None
    error_code: str | None = Field(default=None, description="The model's error code, e.g. SAFETY.")


class TokenCountRecord(_Record):
    """One countTokens call the target made through the harness's counter (``TargetEnvironment.count_tokens``)."""

    index: int
    text: str = Field(description="The exact text counted.")
    tokens: int = Field(description="The model's count (in replay: the recorded one).")


class ExecutionRecord(_Record):
    """One Job_B run, read from the target's artifact registry and the result JSON."""

    artifact_id: str
    session_id: str
    iteration: int
    status: str = Field(description="Registry status at the end of the scenario: pending, executed, consumed, failed.")
    result_status: str | None = Field(default=None, description="Job_B's own status from the result JSON.")
    result_json_path: str | None = None
    stdout_bytes: int | None = None
    stdout_chars: int | None = Field(default=None, description="Characters of stdout in the result JSON.")
    stdout_head: str | None = Field(default=None, description="stdout's first characters (all of it when short), "
                                                              "to judge previews against (not in snapshots).")
    stdout_tail: str | None = Field(default=None, description="stdout's last characters.")
    final_answer: str | None = None
    sublm_calls: int = 0
    sublm_batches: list[dict[str, Any]] = Field(
        default_factory=list, description="Each llm_query_batched call as the code saw it: prompts and wall_s "
                                          "(the result JSON's sublm_batches; volatile, not in snapshots).")
    metrics: dict[str, Any] = Field(default_factory=dict, description="Per-iteration metrics (seed 004): status, "
                                    "code blocks, execution time, sub-LM calls, batched calls, tokens, latency.")


OUTPUT_SAMPLE_CHARS = 65_536
"""How much of an execution's stdout, from each end, the trace keeps to judge previews against."""


class PersistedEventRow(_Record):
    seq: int
    author: str
    invocation_id: str
    state_delta: dict[str, Any]
    deleted_keys: list[str] = Field(default_factory=list)


class PersistedSnapshot(_Record):
    """What storage holds for one session after a turn, read back from storage (not from memory)."""

    session_id: str
    user_id: str
    turn: int
    session_state: dict[str, Any]
    app_state: dict[str, Any]
    user_state: dict[str, Any]
    events: list[PersistedEventRow]
    source: Literal["rows", "reload"] = Field(
        description="'rows': raw rows of the service's tables; 'reload': a fresh get_session()."
    )
    state_bytes: int = Field(description="Bytes of the JSON of session_state as stored.")


class LiveStateRecord(_Record):
    """The live in-memory session state at the end of an invocation (after_run_callback)."""

    session_id: str
    turn: int
    invocation_id: str
    state: dict[str, Any] = Field(description="ctx.session.state as the agents left it (temp: included).")
    persisted_state: dict[str, Any] = Field(
        description="A fresh get_session() from the service at the same moment (app:/user: merged, as ADK returns it)."
    )


class TurnError(_Record):
    """An exception that ended a turn: a verdict of its own (``error``) unless the scenario declares it."""

    type: str = Field(description="Class name of the exception the target's turn raised.")
    message: str
    origin: str = Field(description="The ADK building block that raised it, innermost first: 'model ...', "
                                    "'plugin NAME', 'tool NAME', 'session service CLASS', 'agent NAME' or 'unknown'.")
    cause: str | None = Field(default=None, description="The innermost chained exception, when it is another one.")
    traceback: list[str] = Field(default_factory=list, description="The last lines of the innermost traceback.")
    expected: bool = Field(default=False, description="The scenario declares this error (turn expect_error or "
                                                      "expect.outcome_error): the turn is judged, not an error.")

    def describe(self) -> str:
        return f"{self.type} from {self.origin}: {self.message}"


class TurnOutcome(_Record):
    termination: str | None = None
    final_answer: str | None = None
    delegations: int | None = None
    error: str | None = None
    forced_answer: str | None = Field(default=None, description="Best-effort answer after max_iterations.")
    crash: TurnError | None = Field(default=None, description="The exception that ended the turn, if one did "
                                                              "(caught by the target's own runner or the harness).")
    reported_by: str | None = Field(default=None, description="Who reported the outcome when not the harness "
                                                             "reading storage: the profile's driver, with the fields "
                                                             "it returned.")

    @field_validator("termination", "final_answer", "forced_answer", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        """What an agent stored, as text: a state value may be any JSON value (``FINAL(200)`` stores 200), and a
        number must not end the turn as a harness error. ``str()``, as a profile driver's values are read."""
        return value if value is None or isinstance(value, str) else str(value)


class TurnRecord(_Record):
    turn: int
    session_id: str
    user_id: str
    message: str
    outcome: TurnOutcome
    run_error: str | None = Field(default=None, description="An exception that escaped the target's runner, if any.")


class AgentInfo(_Record):
    name: str
    kind: str = Field(description="Class name, e.g. LlmAgent, LoopAgent, JobBuilderAgent.")
    llm_agent: bool | None = Field(default=None, description="Whether it is an ADK LlmAgent (a subclass too): the "
                                                             "only kind that sends model requests of its own "
                                                             "(None: not recorded).")
    parent: str | None = None
    output_key: str | None = None
    instruction_kind: Literal["string", "provider", "none"] = "none"
    instruction_text: str | None = Field(default=None, description="The raw string instruction, when it is a string.")
    tools: list[str] = Field(default_factory=list)
    has_before_agent_callback: bool = False
    code_executor: str | None = Field(default=None, description="Class of the LlmAgent's ADK code_executor (any "
                                                                "BaseCodeExecutor), when it has one.")
    code_block_delimiters: list[tuple[str, str]] = Field(
        default_factory=list, description="The executor's code_block_delimiters: how code travels in the model's text.")
    code_error_retry_attempts: int | None = Field(
        default=None, description="The executor's error_retry_attempts: after this many failed runs in a row in one "
                                  "invocation, ADK leaves the model's code unrun.")
    model_side_execution: bool = Field(default=False, description="The model runs the code itself "
                                                                  "(BuiltInCodeExecutor): results come in its answer.")


class ContractCaseRecord(_Record):
    """One session-service contract case run against the service the scenario used (harness/run/service_probe.py)."""

    case: str = Field(description="The contract case (harness/contract/), e.g. stale_writer_rejected.")
    description: str = ""
    status: Literal["pass", "fail", "declared", "n/a"] = Field(
        description="'declared': it failed as the service's declared divergence says it does; 'n/a': the case "
                    "cannot judge this service (e.g. no second process can reach it).")
    message: str = Field(default="", description="What broke (fail), the declaration (declared), or why not (n/a).")


class ServiceProbeRecord(_Record):
    """The contract suite run against the run's own session service, once per service kind and process."""

    service: str = Field(description="Class of the service probed.")
    profile: str = Field(description="The service profile whose declarations applied (harness/contract/profiles.py).")
    cases: list[ContractCaseRecord] = Field(default_factory=list)
    skipped: str | None = Field(default=None, description="Why the service was not probed, when it was not.")
    pending: str | None = Field(default=None, description=(
        "Set while another worker of the same run probes this kind of service: the record it shares, which the "
        "run's parent puts here in its place (harness/run/probe_share.py). Never in a finished result."))


class EscapeProbeRecord(_Record):
    """The escape targets the harness set up outside the executor, and what reached them."""

    folder: str = Field(description="The folder outside the executor's: holds the secret; written files land here.")
    secret: str = Field(description="The text of the secret file the code must not read.")
    port: int = Field(description="The local TCP port the harness listened on (not the LM bridge).")
    listening: bool = Field(description="Whether the harness held the port while the scenario ran.")
    listen_error: str | None = None
    connections: int = Field(default=0, description="Connections the listener accepted while the scenario ran.")
    written: list[str] = Field(default_factory=list, description="Files that appeared in the folder meanwhile.")


class Trace(_Record):
    scenario: str
    target: str
    llm_mode: str
    session_service: str
    model_route: str = Field(default="", description="Where the target's model calls went: the LLM mode's "
                                                       "model, and the gateway for the agent's own clients.")
    plugins: list[str] = Field(default_factory=list, description="Class names of the App's plugins (the recorder excluded).")
    agents: list[AgentInfo] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)
    llm_requests: list[LlmRequestRecord] = Field(default_factory=list)
    llm_responses: list[LlmResponseRecord] = Field(default_factory=list)
    executions: list[ExecutionRecord] = Field(default_factory=list)
    persisted: list[PersistedSnapshot] = Field(default_factory=list)
    adk_sessions: dict[str, Any] = Field(default_factory=dict, description="Session id -> the ADK Session the "
                                                                           "service returned at the end (JSON), "
                                                                           "when the run was asked to keep them.")
    created_with: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Session id -> the state the harness created the session with (the "
                                          "scenario's initial_state and what the target seeds, e.g. its context).")
    live_states: list[LiveStateRecord] = Field(default_factory=list)
    token_counts: list[TokenCountRecord] = Field(default_factory=list)
    planted_credentials: list[str] = Field(
        default_factory=list, description="Environment variables set to canary values while the scenario ran "
                                          "(harness/checks/canaries.py); empty when none were planted.")
    executor_confinement: dict[str, Any] | None = Field(
        default=None, description="What the target's executor said about its confinement: applied protections "
                                  "and missing ones with the reason (None: the target says nothing).")
    confinement_required: bool = Field(default=False, description="--require-confinement: a protection the "
                                       "executor says is missing fails executor_confined.")
    escape_probe: EscapeProbeRecord | None = Field(
        default=None, description="What the harness saw of an escape-probe scenario's attempts from outside "
                                  "the executor (harness/run/escape_probe.py).")
    service_semantics: dict[str, str] = Field(
        default_factory=dict, description="Where the run's none_semantics and stale_writes came from (key: the "
                                          "profile field): the target profile, the service class's attribute, "
                                          "a probe of the service, or the contract the harness declares for it; "
                                          "none_behaviour: what the service itself does with None (delete | "
                                          "store) when its class, ADK's contract or the probe says, whatever "
                                          "the profile asks.")
    service_probe: ServiceProbeRecord | None = Field(
        default=None, description="The session-service contract run against the service this scenario used.")
    script_problems: list[str] = Field(default_factory=list, description=(
        "Scripted mode: where the model traffic did not follow the scenario's script, one 'file:line: ...' each "
        "(harness/run/script_fit.py); the 'script' row of the result."))

    def events_of(self, author: str) -> list[EventRecord]:
        return [e for e in self.events if e.author == author]

    def requests_of(self, agent: str) -> list[LlmRequestRecord]:
        return [r for r in self.llm_requests if r.agent == agent]

    def final_persisted(self, session_id: str) -> PersistedSnapshot | None:
        snapshots = [p for p in self.persisted if p.session_id == session_id]
        return snapshots[-1] if snapshots else None
