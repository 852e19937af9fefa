"""The scenario file format: strict pydantic models, published as JSON Schema.

Every model forbids unknown fields and documents every field; the descriptions
become the editor completion text of ``scenarios/scenario.schema.json``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, JsonValue,
                      PrivateAttr, StringConstraints, Tag, model_validator)
from pydantic_core import PydanticCustomError

from harness.scenario.script import CallStep, FaultStep, ResponseStep, TextStep

STEP_TAGS: dict[str, type[BaseModel]] = {"CallStep": CallStep, "FaultStep": FaultStep, "ResponseStep": ResponseStep,
                                         "TextStep": TextStep}
"""Union tags pydantic puts in an error's location inside a script step (the loader drops them)."""

_SHAPES = "{call: <tool>, args: {...}}, {fault: <kind>}, {text: <answer>} or {response: <GenerateContentResponse>}"


def _step_tag(value: Any) -> str:
    if isinstance(value, dict):
        return ("CallStep" if "call" in value else "FaultStep" if "fault" in value
                else "ResponseStep" if "response" in value else "TextStep")
    return type(value).__name__ if type(value).__name__ in STEP_TAGS else "TextStep"


def _check_step_shape(value: Any) -> Any:
    """Reject a step that is not exactly one of the shapes, before the union tries each member."""
    if isinstance(value, BaseModel):
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("step_shape", "a step must be a mapping: " + _SHAPES)
    shapes = [key for key in ("call", "fault", "response") if key in value]
    if len(shapes) > 1:
        raise PydanticCustomError("step_shape", "a step must be exactly one of " + _SHAPES
                                  + f", but this one has both {' and '.join(repr(k) for k in shapes)}")
    if not shapes and "text" not in value:
        raise PydanticCustomError("step_shape", "a step needs 'call', 'fault', 'text' or 'response': " + _SHAPES)
    return value


Step = Annotated[
    Union[Annotated[CallStep, Tag("CallStep")], Annotated[FaultStep, Tag("FaultStep")],
          Annotated[ResponseStep, Tag("ResponseStep")], Annotated[TextStep, Tag("TextStep")]],
    Discriminator(_step_tag),
    BeforeValidator(_check_step_shape),
]
"""One model-script step: exactly one of CallStep, FaultStep, ResponseStep, TextStep."""

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")]
ScriptKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Termination = Annotated[str, Field(min_length=1, examples=["final_answer", "exit_loop", "max_iterations", "fatal_error",
                                                          "model_error", "agent_error"])]
"""How a loop ended, in the scenario's words: the target's value mapped through its profile's ``termination_map``
(the reference agent: final_answer, exit_loop, max_iterations, fatal_error, model_error, agent_error)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(_Model):
    """One user turn of a session."""

    user: str = Field(description="The user message text sent for this turn.")
    expect_error: str | None = Field(
        default=None, min_length=1,
        description="This turn is expected to end in an error whose text contains this substring (a fault the "
                    "scenario injects on purpose). Any other turn that raises makes the scenario's verdict 'error'.")
    state_delta: dict[str, JsonValue] = Field(
        default_factory=dict, description="State changes sent with this message (ADK's run_async state_delta, as "
                                          "an ADK conformance spec's user_messages carry them): applied with the "
                                          "user's event. Targets the harness builds from an App or agent only.")


class SessionSpec(_Model):
    """One session: a user and the turns they send, in order."""

    user: str = Field(default="user_1", description="User id that owns the session (user: state is shared by it).")
    id: str | None = Field(default=None, description="Session id; default '<scenario name>-<index>'.")
    turns: list[Turn] = Field(min_length=1, description="The user turns of this session, in order.")
    initial_state: dict[str, JsonValue] = Field(default_factory=dict,
                                                description="State the session is created with.")


class CheckSelection(_Model):
    """Which registered checks apply to this scenario."""

    only: list[str] | None = Field(default=None, description="Run only these checks (by name); default all.")
    skip: dict[str, Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=dict, description="Checks not to run: check name -> the reason it does not apply.")

    @model_validator(mode="after")
    def _only_and_skip_disjoint(self) -> CheckSelection:
        both = sorted(set(self.only or ()) & set(self.skip))
        if both:
            raise PydanticCustomError("check_selection", "a check cannot be both in 'only' and in 'skip': {names}",
                                      {"names": ", ".join(both)})
        return self


class Expectations(_Model):
    """What the run must show, beyond the invariant checks."""

    checks: CheckSelection = Field(default_factory=CheckSelection, description="Which checks apply.")
    executions: int | None = Field(default=None, ge=0,
                                   description="Number of Job_B runs expected in the whole scenario.")
    final_answer: str | None = Field(default=None, description="The final answer the run must end with.")
    termination: Termination | None = Field(default=None, description="How the last session's loop must end, in the names of the target profile's "
                                                                     "termination_map (the reference agent's: final_answer, exit_loop, "
                                                                     "max_iterations, fatal_error, model_error, agent_error).")
    state: dict[str, JsonValue] = Field(
        default_factory=dict, description="Persisted session-state fragments expected at the end of the last "
                                          "session; a value of null means the key must be absent.")
    state_match: Literal["subset", "exact"] = Field(
        default="subset", description="How 'state' is compared: subset (the keys it names hold those values; the "
                                      "default) or exact (and the session holds no other key, user:/app: included, "
                                      "as ADK's final_session_state is compared).")
    adk_session: dict[str, Any] | None = Field(
        default=None, description="The session ADK recorded for this conversation (an ADK conformance case's "
                                  "generated-session.yaml, as JSON): the run's last session must equal it, its "
                                  "events one by one, with the fields ADK's own replay leaves out left out "
                                  "(check adk_recording_matches).")
    outcome_error: str | None = Field(
        default=None, description="A substring the last turn's error must contain, for scenarios expected to end "
                                  "in a clean failure (e.g. retries exhausted); the last turn's expect_error, "
                                  "said once for the scenario.")
    state_budget_bytes: int = Field(default=16384, ge=1,
                                    description="Upper bound on the size of persisted state, in bytes of JSON.")


class Limits(_Model):
    """Executor and prompt limits for this scenario (the target's defaults apply to fields left out)."""

    executor_timeout_s: float | None = Field(default=None, gt=0, le=120,
                                             description="Job_B wall-clock timeout in seconds.")
    max_sublm_calls_per_run: int | None = Field(default=None, ge=0,
                                                description="Cap on llm_query prompts in one Job_B run.")
    max_sublm_tokens_per_session: int | None = Field(default=None, ge=0,
                                                     description="Cap on sub-LM tokens in one session.")
    context_budget_tokens: int | None = Field(
        default=None, ge=1, description="Token budget of the analyst's assembled prompt (instruction, summary, "
                                        "history, snippets); the check context_budget applies when it is set.")
    preview_chars: int | None = Field(
        default=None, ge=1, description="Characters of Job_B's stdout/stderr a preview in state may hold (the "
                                        "check previews_bounded judges previews against it).")
    history_max_entries: int | None = Field(
        default=None, ge=1, description="Entries the user's history keeps (the newest); a scenario with more "
                                        "turns than this exercises the fold.")
    model_timeout_s: float | None = Field(
        default=None, gt=0, le=120,
        description="Client timeout of each agent model request, in seconds, in scripted mode and replay (default "
                    "2 s; live runs keep google-genai's). A 'slow' fault whose delay is past it exercises the "
                    "timeout path; a shorter one makes that cheap.")


class CrashAt(_Model):
    """A crash case kept as a regression: where the scenario's run is SIGKILLed and how it recovers
    (``rlm-conformance crash`` runs this point of it; docs/crash.md)."""

    after: int | Annotated[str, StringConstraints(min_length=1)] | None = Field(
        default=None, description="Kill right after the store acknowledged this event: its index in the run's "
                                  "appended events (from 0), or the first event of this author.")
    before: int | Annotated[str, StringConstraints(min_length=1)] | None = Field(
        default=None, description="Or: kill right before this event is written (index or author, as 'after').")
    submitted: int | None = Field(
        default=None, ge=0, description="Or: kill once the workspace created the run's job run of this index (from "
                                        "0), before the submit is answered (a workspace the harness keeps: the "
                                        "databricks fake).")
    recovery: Literal["retry", "next_turn", "resume"] | None = Field(
        default=None, description="How a fresh process recovers: retry (the crashed turn's message again), "
                                  "next_turn (the next message) or resume (ADK resumes the interrupted invocation: "
                                  "a resumable App); null: the target profile's 'recovery'.")

    @model_validator(mode="after")
    def _one_point(self) -> CrashAt:
        if sum(point is not None for point in (self.after, self.before, self.submitted)) != 1:
            raise PydanticCustomError("crash_point", "crash needs exactly one of 'after' and 'before' (an event "
                                                     "index or an author) and 'submitted' (a job run's index), "
                                                     "e.g. crash: {after: job_builder}")
        return self

    @property
    def point(self) -> tuple[Literal["after", "before", "submitted"], int | str]:
        """(kind, event index or author, or job run index), as harness/crash/matrix.py's ``only`` takes it."""
        if self.submitted is not None:
            return ("submitted", self.submitted)
        return ("after", self.after) if self.after is not None else ("before", self.before)  # type: ignore


CONCURRENT_RUN_NOTE = ("{name} is a concurrent case: its runners send their turns at once only under "
                       "`rlm-conformance crash {name}` (or pytest --rlm-crash after); one run after another would "
                       "judge nothing of it")
"""What ``run`` (CLI and pytest) says of a concurrent case it skips."""


class Concurrent(_Model):
    """Runners sending the scenario's turns at the same time, on one target and its one session service
    (``rlm-conformance crash`` judges what each runner saw; docs/crash.md, "Two runners at once")."""

    runners: int = Field(default=2, ge=2, le=8, description="How many runners send turns at once.")
    sessions: Literal["same", "per_runner"] = Field(
        default="same", description="same: every runner on the first session's id (a double submit); per_runner: "
                                    "runner i on a session of its own (two sessions of one user at once). With one "
                                    "session in 'sessions', every runner sends its turns; with one per runner, "
                                    "runner i sends session i's.")


class Scenario(_Model):
    """One conformance scenario: user turns, a model script, and what must come out."""

    name: Slug = Field(description="Scenario name: lowercase letters, digits, underscores; equals the file stem.")
    description: str = Field(description="What the scenario exercises, in one sentence.")
    target: str | None = Field(default=None, pattern=r"^(reference|legacy|[A-Za-z_][\w.]*:[A-Za-z_][\w.]*)$",
                               description="Target to run: 'reference', 'legacy' or 'module:attr' (default: the "
                                           "profile's target, else reference).")
    profile: str | None = Field(default=None, min_length=1,
                                description="The target profile YAML this scenario is written for, relative to the "
                                            "scenario file (--profile overrides it).")
    max_iterations: int | None = Field(default=None, ge=1, description="max_iterations of the orchestrator loop "
                                                                      "(null: the target's own LoopAgent bound).")
    limits: Limits = Field(default_factory=Limits, description="Limits: Job_B timeout, sub-LM budgets, the analyst's prompt budget.")
    executor: Literal["warm", "one-shot"] | None = Field(
        default=None, description="How a local Job_B runs this scenario's blocks whatever the run's --executor says: "
                                  "'one-shot' (a process per block) or 'warm' (one process per session). Pin it "
                                  "when the scenario checks one of the two, e.g. the environment each gives the "
                                  "code; null (default): the run's choice.")
    context: JsonValue = Field(default=None, description="Data given to executed code as `context`.")
    clock_start: AwareDatetime | None = Field(
        default=None, description="The instant the target's wall clock starts at (ISO 8601 with a time zone, e.g. "
                                  "2026-03-02T09:00:00Z); each model exchange moves it one second on. Null (default): "
                                  "2026-01-01T00:00:00Z in replay and scripted runs, the real time in a live recording "
                                  "(kept in the cassette, so its replay starts there). docs/your-agent.md, 'The clock'.")
    escape_probe: bool = Field(
        default=False, description="The harness plants escape targets outside the executor while this scenario runs "
                                   "(a secret file, a folder, a local TCP listener: harness/run/escape_probe.py) and "
                                   "watches them; executor_confined judges the code's attempts. Local backend only.")
    sessions: list[SessionSpec] = Field(min_length=1, description="Sessions run one after another.")
    script: dict[ScriptKey, list[Step]] = Field(
        description="Model script: agent name (or 'sub_lm' for llm_query calls) -> its answers, in order.",
        json_schema_extra={"additionalProperties": False})
    expect: Expectations = Field(default_factory=Expectations, description="Expectations on the run.")
    tags: list[str] = Field(default_factory=list, description="Free labels to select scenarios by.")
    crash: CrashAt | None = Field(
        default=None, description="A crash case: the run killed at this point and recovered (by `rlm-conformance "
                                  "crash`; `run` runs the scenario uncrashed). docs/crash.md.")
    concurrent: Concurrent | None = Field(
        default=None, description="A concurrency case: the turns sent by several runners at once, judged by "
                                  "`rlm-conformance crash` (a client-observed history check); `run` skips it, "
                                  "saying so. docs/crash.md.")
    # Set by the loader (a ScenarioSource): the file and text it came from, so a message found after the
    # run (a script that does not fit the target) can still name file:line. Not a field: not in the schema.
    _source: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _concurrent_sessions(self) -> Scenario:
        if self.concurrent is None:
            return self
        if self.crash is not None:
            raise PydanticCustomError("concurrent", "a scenario is a crash case or a concurrent case, not both: "
                                                    "drop 'crash' or 'concurrent'")
        if len(self.sessions) not in (1, self.concurrent.runners):
            raise PydanticCustomError(
                "concurrent", "concurrent: {runners} runners need one session (every runner sends its turns) or "
                "{runners} (runner i sends session i's), not {count}",
                {"runners": self.concurrent.runners, "count": len(self.sessions)})
        if len({spec.user for spec in self.sessions}) > 1:
            raise PydanticCustomError("concurrent", "concurrent runners work for one user: give every session the "
                                                    "same 'user'")
        return self

    def session_id(self, index: int) -> str:
        """The id of the ``index``-th session: its own, else ``<scenario name>-<index>``."""
        return self.sessions[index].id or f"{self.name}-{index}"
