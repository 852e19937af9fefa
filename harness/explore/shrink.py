"""The last shrinking pass: structural simplifications of a plan, tried greedily, each kept when the plan still
fails the same check.

Hypothesis' shrinker works on the choices behind a plan and, at a second or more per run, may spend its budget
before it reaches the obvious: one turn fewer, a step fewer, ``max_iterations`` one lower. This pass tries exactly
those, biggest first — drop a session, a turn, a step, an iteration, a starting key; make a step simpler (an
earlier behaviour of the library, a call, fault or transfer into plain text, a late answer on time); no context;
the first user — and starts over after each success, until none applies or the budget is spent. Deterministic:
the candidates come in a fixed order and every run is cached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from .library import Library
from .plan import Plan, StepPlan


def candidates(plan: Plan, library: Library) -> Iterator[Plan]:
    """Simpler plans than ``plan``, one change each, the biggest reductions first."""
    sessions, steps = list(plan.sessions), list(plan.steps)
    if len(sessions) > 1:
        for i in range(len(sessions)):
            yield replace(plan, sessions=tuple(sessions[:i] + sessions[i + 1:]))
    for i, session in enumerate(sessions):
        if session.turns > 1:
            yield replace(plan, sessions=_with(sessions, i, replace(session, turns=session.turns - 1)))
    for i in range(len(steps)):
        yield replace(plan, steps=tuple(steps[:i] + steps[i + 1:]))
    if plan.max_iterations is not None and plan.max_iterations > 1:
        yield replace(plan, max_iterations=plan.max_iterations - 1)
    for i, session in enumerate(sessions):
        for key in session.initial_state:
            kept = tuple(k for k in session.initial_state if k != key)
            yield replace(plan, sessions=_with(sessions, i, replace(session, initial_state=kept)))
    names = [b.name for b in library.behaviours]
    for i, step in enumerate(steps):
        if step.delay:
            yield replace(plan, steps=_with(steps, i, replace(step, delay=0.0)))
        if step.kind in ("call", "fault", "transfer"):
            yield replace(plan, steps=_with(steps, i, StepPlan(kind="text")))
        elif step.kind == "delegate" and step.behaviour in names:
            for simpler in names[:names.index(step.behaviour)]:
                yield replace(plan, steps=_with(steps, i, replace(step, behaviour=simpler)))
    if plan.context:
        yield replace(plan, context=False)
    for i, session in enumerate(sessions):
        if session.user != "user_1" and all(s.user != "user_1" for s in sessions):
            yield replace(plan, sessions=_with(sessions, i, replace(session, user="user_1")))


def _with(items: list, index: int, value: object) -> tuple:
    return tuple(items[:index] + [value] + items[index + 1:])


def polish(plan: Plan, library: Library, still_fails: Callable[[Plan], bool | None], *,
           ahead: Callable[[list[Plan]], None] = lambda plans: None) -> Plan:
    """The simplest plan reached from ``plan`` by ``candidates`` that ``still_fails``; ``still_fails`` returns
    None when the budget is spent (the pass stops there). ``ahead`` is told the candidate about to be tried and
    those after it (``explore -j``: workers run the next ones meanwhile)."""
    improved = True
    while improved:
        improved = False
        tried = list(candidates(plan, library))
        for index, candidate in enumerate(tried):
            ahead(tried[index:])
            verdict = still_fails(candidate)
            if verdict is None:
                return plan
            if verdict:
                plan, improved = candidate, True
                break
    return plan

