"""Hypothesis strategies for conversations, built from the target's structure (``TargetModel``).

Every choice is ordered simplest first (one session, one turn, plain text, the library's first behaviour), so
Hypothesis' shrinker moves a failing conversation toward fewer sessions, turns and steps and simpler code.
Tool arguments are drawn from each tool's declared JSON Schema, with small values.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from .crash_example import KINDS as CRASH_KINDS
from .crash_example import MAX_EVENT as MAX_CRASH_EVENT
from .library import Library
from .plan import ANSWER_DELAY_S, INITIAL_STATE, TIMEOUT_FAULT, Plan, SessionPlan, StepPlan
from .target_model import TargetModel, ToolModel

USERS = ("user_1", "user_2")
WORDS = ("explore", "x", "print(1)", "")
FAULTS = ("http_503", "http_429", "http_500", "malformed", "empty", TIMEOUT_FAULT)
"""Model faults an analyst call may meet (the retried statuses first; the timeout costs a second, so last)."""
MAX_SESSIONS, MAX_TURNS, MAX_ITERATIONS, MAX_STEPS = 3, 3, 3, 6
LATE_STEP = (None, None, *range(MAX_STEPS))
SEED_CRASH = ("after", 3)
"""Which of the analyst's answers comes ``ANSWER_DELAY_S`` late: none for a quarter of the plans, else a step index
(one past the plan's steps, or a fault: none late; about one plan in five has a late answer); shrinks to none.
Drawn after everything else, so the rest of a plan is drawn as it was before late answers existed."""


def json_value(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """A small value of the JSON Schema ``schema`` (enough types for tool arguments; unknown: a string)."""
    if "enum" in schema and schema["enum"]:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return st.integers(0, 3)
    if kind == "number":
        return st.sampled_from([0.0, 1.5])
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        if depth > 1:
            return st.just([])
        return st.lists(json_value(schema.get("items") or {}, depth + 1), max_size=2)
    if kind == "object":
        if depth > 1:
            return st.just({})
        return arguments(schema, depth + 1)
    if kind == "null":
        return st.none()
    return st.sampled_from(WORDS)


def arguments(schema: dict[str, Any], depth: int = 0, *, skip: tuple[str, ...] = ()) -> st.SearchStrategy[dict]:
    """The required properties of an object schema, each drawn with ``json_value`` (``skip``: set elsewhere)."""
    properties = schema.get("properties") or {}
    required = [n for n in (schema.get("required") or []) if n not in skip]
    return st.fixed_dictionaries({n: json_value(properties.get(n) or {}, depth) for n in required})


def tool_call(tool: ToolModel) -> st.SearchStrategy[StepPlan]:
    return arguments(tool.schema).map(lambda args: StepPlan(kind="call", tool=tool.name,
                                                            args=json.dumps(args, sort_keys=True)))


def delegation(model: TargetModel, library: Library) -> st.SearchStrategy[StepPlan]:
    tool = model.agent(model.analyst).tool(model.delegate_tool) if model.delegate_tool else None
    others = arguments(tool.schema, skip=(model.code_arg or "",)) if tool is not None else st.just({})
    names = [b.name for b in library.behaviours if not b.escape_probe]  # the escape probe: a seed conversation only
    return st.builds(lambda name, args: StepPlan(kind="delegate", behaviour=name,
                                                 args=json.dumps(args, sort_keys=True)),
                     st.sampled_from(names), others)


def analyst_steps(model: TargetModel, library: Library) -> st.SearchStrategy[StepPlan]:
    """One model answer of the analyst: plain text, a delegation, a call of one of its other tools, a model fault,
    or a transfer to an agent ADK lets it transfer to."""
    choices: list[st.SearchStrategy[StepPlan]] = [st.just(StepPlan(kind="text"))]
    if model.delegates:  # drawn three times as often as another answer: delegations exercise the most mechanics
        choices += [delegation(model, library)] * 3
    choices += [tool_call(tool) for tool in model.other_tools]
    choices.append(st.sampled_from(FAULTS).map(lambda kind: StepPlan(kind="fault", tool=kind)))
    analyst = model.agent(model.analyst)
    if analyst is not None and analyst.transfers:  # last: targets without transfers draw what they drew before
        choices.append(st.sampled_from(analyst.transfers).map(lambda name: StepPlan(kind="transfer", tool=name)))
    return st.one_of(choices)


def sessions() -> st.SearchStrategy[tuple[SessionPlan, ...]]:
    state = st.lists(st.sampled_from(list(INITIAL_STATE)), unique=True, max_size=2).map(tuple)
    one = st.builds(SessionPlan, user=st.sampled_from(USERS), turns=st.integers(1, MAX_TURNS), initial_state=state)
    return st.lists(one, min_size=1, max_size=MAX_SESSIONS).map(tuple)


def iteration_bounds(model: TargetModel) -> st.SearchStrategy[int | None]:
    """The target's own loop bound first (None: the scenario leaves max_iterations out), then small ones that reach
    the bound cheaply; a target whose bound is unknown (no LoopAgent read, or an unbounded one): small ones only."""
    small = st.integers(1, MAX_ITERATIONS)
    return st.one_of(st.none(), small) if model.loop_bound is not None else small


def plans(model: TargetModel, library: Library, *, crash: bool = False) -> st.SearchStrategy[Plan]:
    """Whole conversations for ``model``; with ``crash``, each killed at a drawn point (crash_example.py)."""
    steps = st.lists(analyst_steps(model, library), max_size=MAX_STEPS).map(tuple)
    points = st.tuples(st.sampled_from(CRASH_KINDS), st.integers(0, MAX_CRASH_EVENT)) if crash else st.none()
    plan = st.builds(Plan, max_iterations=iteration_bounds(model), sessions=sessions(), steps=steps,
                     context=st.booleans(), crash=points)
    return st.builds(_late, plan, st.sampled_from(LATE_STEP))


def _late(plan: Plan, index: int | None) -> Plan:
    """``plan`` with its answer ``index`` late (a fault keeps its own timing)."""
    if index is None or index >= len(plan.steps) or plan.steps[index].kind == "fault":
        return plan
    steps = list(plan.steps)
    steps[index] = replace(steps[index], delay=ANSWER_DELAY_S)
    return replace(plan, steps=tuple(steps))


def simplest(schema: dict[str, Any]) -> Any:
    """The simplest value of ``schema``, as ``json_value`` would shrink to (for the seed conversations)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 0, "number": 0.0, "boolean": False, "array": [], "null": None,
            "object": {n: simplest((schema.get("properties") or {}).get(n) or {}) for n in schema.get("required") or []}
            }.get(kind, WORDS[0])


def seed_plans(model: TargetModel, library: Library, *, crash: bool = False) -> list[Plan]:
    """Conversations tried first, before any generated one: the shapes that hide state bugs and that nobody thinks
    to script (issue 32) — a turn after a final answer, a variable kept across iterations, an error between two
    delegations, one user with two sessions, a second user, code that lists the environment it runs in (the probe
    executor_env_clean reads: a credential the executor hands model-written code), code that tries to get out of
    its executor (executor_confined's probe, under the escape watch), and an iteration that answers
    in text after one that delegated (last: stale glue from the delegation re-running its code). Small, so the
    shrinker has little to do;
    built from the target's structure and the library like any generated plan (targets that cannot delegate get
    them with text)."""
    names = {b.name for b in library.behaviours}
    tool = model.agent(model.analyst).tool(model.delegate_tool) if model.delegate_tool and model.analyst else None
    args = json.dumps({n: simplest(tool.properties.get(n) or {}) for n in tool.required if n != model.code_arg}
                      if tool is not None else {}, sort_keys=True)

    def run(*behaviours: str) -> tuple[StepPlan, ...]:
        if not model.delegates:
            return (StepPlan(kind="text"),)
        return tuple(StepPlan(kind="delegate", behaviour=b, args=args) for b in behaviours if b in names)

    one, two = SessionPlan("user_1", 1), SessionPlan("user_1", 2)
    seeds = _seeds(model, library, run, one, two)
    # --crash: each seed killed after its fourth event (a delegating analyst: the execution stored, no summary)
    return [replace(plan, crash=SEED_CRASH) for plan in seeds] if crash else seeds


def _seeds(model: TargetModel, library: Library, run: Any, one: SessionPlan, two: SessionPlan) -> list[Plan]:
    return [Plan(1, (two,), run("final")),
            Plan(2, (one,), run("define_variable", "use_variable")),
            Plan(2, (one,), run("raise", "small_output")),
            Plan(1, (one, one), run("small_output")),
            Plan(1, (one, SessionPlan("user_2", 1)), run("small_output", "small_output")),
            Plan(1, (one,), run("list_environment")),
            *[Plan(1, (one,), run(b.name)) for b in library.behaviours if b.escape_probe],  # never drawn: here only
            Plan(2, (one,), run("small_output") + (StepPlan(kind="text"),))]
