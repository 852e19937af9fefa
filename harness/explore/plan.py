"""A generated conversation (``Plan``) and the ordinary ``Scenario`` it becomes.

A plan is what Hypothesis draws: sessions (each a user, a number of turns and keys to start with: ``app:``,
``user:``, ``temp:``, plain, a None value), ``max_iterations``, and the analyst's model answers in order —
plain text, a call of an offered tool with arguments, a delegation of code from the behaviour library, or a
model fault (an HTTP error the client retries, a broken answer, or a timeout), or a transfer to an agent ADK
lets it transfer to; an answer may come late (``delay``, well inside the client's timeout). Every other LlmAgent
(a results processor, a formatter, an agent behind an ``AgentTool`` the analyst calls) and the sub-LM answer with
plain text. Each agent's script is padded with plain-text answers past what the conversation can use, so the
target never asks its model more often than scripted: steps left unused are the generator's slack, never a
finding (``trimmed`` cuts them off the scenario that is written).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..scenario.models import Scenario
from ..scenario.script import SUB_LM
from .library import Library
from .target_model import TargetModel

SAMPLE_CONTEXT = {"sales": [{"region": "north", "amount": 120}, {"region": "south", "amount": 80}]}
QUESTIONS = ("What is the total sales amount?", "And how many sales were there?", "Which region sold most?")
ANALYST_TEXT = "Nothing to run for this; the answer is in the data already."
FILLER_TEXT = "Nothing more to add."
INITIAL_STATE: dict[str, object] = {"explore_note": "kept", "user:explore_pref": "dark", "app:explore_shared": "shared",
                                    "temp:explore_scratch": "scratch", "explore_cleared": None}
"""Keys a session may start with (``initial_state``), one per scope, and a None value."""
TIMEOUT_FAULT = "timeout"
"""The generated fault in which the model answers only after the client has given up (a ``slow`` step)."""
MODEL_TIMEOUT_S = 1.0
"""The client timeout of a plan with a timeout fault (``limits.model_timeout_s``): the mode's 2 s would make each
such example wait 2 s; a scripted answer takes milliseconds, so 1 s still never cuts an answer in time short."""
ANSWER_DELAY_S = 0.2
"""How late a delayed answer comes: well inside any client timeout above."""
TRANSFER_TOOL = "transfer_to_agent"
"""ADK's tool for handing the conversation to another agent (offered when the agent has transfer targets)."""


@dataclass(frozen=True)
class SessionPlan:
    user: str
    turns: int
    initial_state: tuple[str, ...] = ()  # keys of INITIAL_STATE


@dataclass(frozen=True)
class StepPlan:
    kind: Literal["text", "call", "delegate", "fault", "transfer"]
    tool: str | None = None  # the tool called; for a fault, its kind (http_503, malformed ...); the transfer's agent
    args: str = "{}"  # JSON text of the call's other arguments (hashable, stable)
    behaviour: str | None = None
    delay: float = 0.0  # seconds the model takes to give this answer (faults: none; a timeout has its own)

    def describe(self) -> str:
        late = f"+{self.delay:g}s" if self.delay else ""
        if self.kind == "text":
            return "text" + late
        if self.kind == "delegate":
            return f"delegate:{self.behaviour}{late}"
        if self.kind == "fault":
            return f"fault:{self.tool}"
        if self.kind == "transfer":
            return f"transfer:{self.tool}{late}"
        return f"call:{self.tool}{late}"


@dataclass(frozen=True)
class Plan:
    max_iterations: int | None  # None: the target's own loop bound (the scenario leaves max_iterations out)
    sessions: tuple[SessionPlan, ...]
    steps: tuple[StepPlan, ...]
    context: bool = True
    tags: tuple[str, ...] = field(default=())
    crash: tuple[str, int] | None = None  # explore --crash: (after|before, event index) where the run is killed

    @property
    def turns(self) -> int:
        return sum(s.turns for s in self.sessions)

    def key(self) -> str:
        """A stable identity: equal plans run once (the explorer's cache)."""
        return json.dumps(asdict(self), sort_keys=True)

    def size(self, library: Library) -> tuple[int, ...]:
        """Smaller is simpler: turns, sessions, steps, code, iterations (what shrinking minimises)."""
        code = sum(len(library.named(s.behaviour).code) for s in self.steps if s.behaviour)
        later = sum(i for i, b in enumerate(library.behaviours) for s in self.steps if s.behaviour == b.name)
        state = sum(len(s.initial_state) for s in self.sessions)
        late = sum(1 for s in self.steps if s.delay)
        crash = self.crash[1] if self.crash else 0
        return (self.turns, len(self.sessions), len(self.steps), state, self.max_iterations or 0, later, code, late,
                int(self.context), crash, self.key())

    def describe(self) -> str:
        who = ", ".join(f"{s.user}x{s.turns}" + (f" with {'/'.join(s.initial_state)}" if s.initial_state else "")
                        for s in self.sessions)
        bound = "own" if self.max_iterations is None else self.max_iterations
        crash = f", crash {self.crash[0]} #{self.crash[1]}" if self.crash else ""
        return f"sessions [{who}], max_iterations {bound}, steps [" + ", ".join(
            s.describe() for s in self.steps) + "]" + crash


def _filler_count(plan: Plan, model: TargetModel) -> int:
    # An iteration asks the analyst at most a few times (a tool call, then text); other agents once or twice.
    iterations = plan.max_iterations or model.loop_bound or 1
    return plan.turns * iterations * 3 + 4


def analyst_step(step: StepPlan, model: TargetModel, library: Library) -> dict[str, Any]:
    if step.kind == "fault":
        if step.tool == TIMEOUT_FAULT:  # answers after the client gave up (the plan's limits set that timeout)
            return {"fault": "slow", "delay": MODEL_TIMEOUT_S + 0.3}
        return {"fault": step.tool}
    answer = _answer(step, model, library)
    return {**answer, "delay": step.delay} if step.delay else answer


def _answer(step: StepPlan, model: TargetModel, library: Library) -> dict[str, Any]:
    if step.kind == "text":
        return {"text": ANALYST_TEXT}
    if step.kind == "transfer":
        return {"call": TRANSFER_TOOL, "args": {"agent_name": step.tool}}
    args = json.loads(step.args)
    if step.kind == "call":
        return {"call": step.tool, "args": args}
    code = library.named(step.behaviour or "").render(preview_chars=model.preview_chars)
    if model.delegate_tool is not None and model.code_arg is not None:
        return {"call": model.delegate_tool, "args": {**args, model.code_arg: code}}
    if model.code_delimiters is not None:
        return code_answer(code, model)
    return {"text": library.wrap(code)}


def code_answer(code: str, model: TargetModel) -> dict[str, Any]:
    """The analyst's answer handing ``code`` to its ADK code executor: the code in the executor's own delimiters
    (ADK runs it), or for a model-side executor the model's answer with the code and a result of its own (offline,
    nothing runs it: what a cassette would hold)."""
    lead, trail = model.code_delimiters or ("", "")
    if not model.model_side:
        return {"text": lead + code + trail}
    return {"response": {"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"language": "PYTHON", "code": code}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "(run by the model)\n"}}]},
        "finishReason": "STOP"}]}}


def to_scenario(plan: Plan, model: TargetModel, library: Library, *, name: str, description: str,
                target: str | None = None, profile: str | None = None) -> Scenario:
    filler = _filler_count(plan, model)
    script: dict[str, list[dict[str, Any]]] = {}
    for agent in model.agents:
        if agent.name == model.analyst:
            steps = [analyst_step(s, model, library) for s in plan.steps]
            script[agent.name] = steps + [{"text": ANALYST_TEXT}] * filler
        else:  # an agent behind an AgentTool answers once more for each call of its tool
            calls = sum(1 for s in plan.steps if s.kind == "call" and agent.via_tool and s.tool == agent.via_tool)
            script[agent.name] = [{"text": FILLER_TEXT}] * (filler + calls)
    sub_lm: list[dict[str, Any]] = []
    for step in plan.steps:
        if step.behaviour:
            behaviour = library.named(step.behaviour)
            sub_lm += [{"text": "hello", "delay": behaviour.sub_lm_delay}] * behaviour.sub_lm
    script[SUB_LM] = sub_lm + [{"text": "hello"}] * filler
    sessions = []
    number = 0
    questions = model.questions or QUESTIONS
    for spec in plan.sessions:
        turns = []
        for _ in range(spec.turns):
            turns.append({"user": questions[number % len(questions)]})
            number += 1
        session: dict[str, Any] = {"user": spec.user, "turns": turns}
        if spec.initial_state or model.starting_state:  # the drawn keys over the target's starting state
            session["initial_state"] = {**model.starting_state,
                                        **{key: INITIAL_STATE[key] for key in spec.initial_state}}
        sessions.append(session)
    data: dict[str, Any] = {"name": name, "description": description, "sessions": sessions, "script": script}
    if plan.max_iterations is not None:  # written out only when it changes the target's own bound
        data["max_iterations"] = plan.max_iterations
    if target is not None:
        data["target"] = target
    if profile is not None:
        data["profile"] = profile
    if plan.context:
        data["context"] = model.context if model.context is not None else SAMPLE_CONTEXT
    if limits := plan_limits(plan, library):
        data["limits"] = limits
    if plan.crash is not None:
        data["crash"] = {plan.crash[0]: plan.crash[1]}
    if any(step.behaviour and library.named(step.behaviour).escape_probe for step in plan.steps):
        data["escape_probe"] = True  # the harness plants and watches what the code goes for (harness/run/escape_probe.py)
    return Scenario.model_validate(data)


def plan_limits(plan: Plan, library: Library) -> dict[str, Any]:
    """The scenario limits the plan needs: its behaviours' (``past_executor_timeout``: a 1 s executor timeout, so
    its 5 s sleep is cut short; two behaviours asking for the same limit get the smaller, limits are caps), and
    ``MODEL_TIMEOUT_S`` when a model call times out."""
    limits: dict[str, Any] = {}
    for step in plan.steps:
        for name, value in (library.named(step.behaviour).limits if step.behaviour else {}).items():
            limits[name] = min(limits[name], value) if name in limits else value
    if any(step.kind == "fault" and step.tool == TIMEOUT_FAULT for step in plan.steps):
        limits["model_timeout_s"] = MODEL_TIMEOUT_S
    return limits


_UNUSED = re.compile(r"(\d+) step\(s\) of script\.(\w+) from index (\d+) on were never asked for")


def steps_used(script_problems: list[str]) -> dict[str, int]:
    """Agent -> steps its model asked for, for the agents that left steps unused (the ``script`` row's lines)."""
    used = {}
    for line in script_problems:
        match = _UNUSED.search(line)
        if match:
            used[match.group(2)] = int(match.group(3))
    return used


def overran(script_problems: list[str]) -> bool:
    """The target asked a model more often than scripted (the endpoint answered HTTP 400): the generator's fault."""
    return any("got HTTP 400 from the scripted endpoint" in line or "the scripted endpoint refused" in line
               for line in script_problems)


def trimmed(scenario: Scenario, used: dict[str, int]) -> Scenario:
    """``scenario`` with each agent's unused steps cut off (agents never asked: no key at all)."""
    script = {}
    for agent, steps in scenario.script.items():
        keep = used.get(agent, len(steps))
        if keep:
            script[agent] = steps[:keep]
    return scenario.model_copy(update={"script": script})
