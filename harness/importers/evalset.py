"""ADK eval sets (``*.evalset.json``, and the older ``*.test.json``) -> scenarios that run offline with no key.

An ``EvalCase`` holds a recorded conversation: per invocation, the user's message, the trajectory (the events
each agent produced: its model's function calls and texts, the tools' responses) and the final response; plus
the session it starts from and, optionally, the final session state ADK's evaluator never scores. A scenario
is the same conversation with the model's side as a script, so:

* ``session_input`` -> the session's user and ``initial_state``;
* each ``Invocation`` -> a turn, its ``user_content`` text the message;
* each model answer in the trajectory, in order, per author -> that agent's script: a function call is a
  ``call`` step, text a ``text`` step (tool responses are not scripted: the agent's real tools run again);
* the final response -> a ``text`` step of the agent that gave it, where it gave it (ADK 2.x marks that event,
  which may come before the turn's last tool calls; for ADK 1.x files it is the agent whose turn the last event
  was, or the agent a ``transfer_to_agent`` handed over to, at the end) —
  unless a custom (non-LLM) agent gave it, an executor's report: running that agent gives it again;
* ``final_session_state`` -> ``expect.state``, compared as a subset or, with ``exact``, as the whole state; a key
  whose name or value holds a placeholder ``export evalset`` wrote for a value the run drew afresh (an id, a time, a
  temporary path: harness/snapshot/normalize.py) is left out, with a note, and the rest compared as a subset;
* what no eval set holds — the sub-model's answers to code that calls ``llm_query`` — is named per case (a note
  with the fix), or taken from a file of answers (``--sub-lm``).

What cannot be scripted faithfully is refused, one ``Refusal`` per case with the reason, never dropped in
silence: a ``conversation_scenario`` (a user simulator plays the user: there is no fixed conversation), a user
message that is not text, two function calls in one model answer (a scripted step answers one), a trajectory
without authors (``IntermediateData``) when the target has more than one LlmAgent to attribute it to, an author
that is not an agent of the target.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..snapshot.normalize import holds_placeholder
from .sub_model import Answers, load_sub_model_answers, with_sub_model_answers

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import EvalCase, Invocation
    from google.adk.evaluation.eval_set import EvalSet

SUFFIXES = (".evalset.json", ".test.json")
TRANSFER = "transfer_to_agent"


class EvalSetError(HarnessError):
    """An eval set file that cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class AgentTree:
    """What attribution needs to know of the target: its LlmAgents, and the one a turn starts with."""

    llm_agents: tuple[str, ...]
    first: str | None
    other_agents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Imported:
    name: str
    source: str
    scenario: dict[str, Any]
    notes: tuple[str, ...] = ()  # what the file could not hold and the scenario needs (the fix included)


@dataclass(frozen=True)
class Refusal:
    source: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}"


class CaseRefused(HarnessError):
    """One case cannot be scripted; carries the reason."""


def with_sub_model(imported: Imported, case_id: str, answers: Answers | None,
                    answers_file: Path | None) -> Imported:
    """The sub-model's answers the case's code needs, from ``answers``; else a note saying how to give them."""
    scenario, notes = with_sub_model_answers(imported.scenario, ids=(imported.name, case_id), answers=answers,
                                             answers_file=answers_file, held_by="no eval set")
    return dataclasses.replace(imported, scenario=scenario, notes=imported.notes + notes)


def eval_set_files(path: Path) -> list[Path]:
    """``path`` itself, or every eval set file under it (sorted), or a clear error."""
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        if found:
            return found
        raise EvalSetError(f"{path}: no {' or '.join('*' + s for s in SUFFIXES)} file in this folder. Fix: name "
                           f"an eval set file, or the folder that holds them.")
    raise EvalSetError(f"{path}: no such file or folder. Fix: name an ADK eval set file ({', '.join(SUFFIXES)}) or "
                       f"a folder of them.")


def load_eval_set(path: Path) -> EvalSet:
    """An ``EvalSet`` file, or an older ``.test.json`` (a list of ``query`` / ``expected_tool_use`` /
    ``reference`` turns, or of named cases with ``data``), converted with ADK's own converter."""
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
    from pydantic import ValidationError

    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalSetError(f"{path}: cannot read it as JSON ({exc}). Fix: give an ADK eval set file.") from None
    stem = slug(path.name.removesuffix(".json").removesuffix(".evalset").removesuffix(".test"))
    try:
        if isinstance(data, dict):
            return EvalSet.model_validate(data)
        if isinstance(data, list) and all(isinstance(x, dict) and "query" in x for x in data):
            data = [{"name": stem, "data": data, "initial_session": {}}]
        return convert_eval_set_to_pydantic_schema(stem, data)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        raise EvalSetError(f"{path}: not an ADK eval set ({type(exc).__name__}: {' '.join(first[:3])}). Fix: give "
                           f"a file `adk eval` reads (an EvalSet, or the older list of query/expected_tool_use/"
                           f"reference turns).") from None


def slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return slug or "case"


def _text(content: Any) -> str | None:
    parts = list(getattr(content, "parts", None) or [])
    if any(p.text is None for p in parts):
        return None
    return "".join(p.text for p in parts)


def _calls(content: Any) -> list[Any]:
    return [p.function_call for p in getattr(content, "parts", None) or () if p.function_call]


def _answer_step(content: Any, *, where: str) -> dict[str, Any] | None:
    """The script step that makes an agent's model answer ``content``; None for a tool response."""
    parts = list(getattr(content, "parts", None) or ())
    if any(p.function_response for p in parts):
        return None
    calls = _calls(content)
    text = "".join(p.text for p in parts if p.text)
    if len(calls) > 1:
        raise CaseRefused(f"{where}: one model answer makes {len(calls)} function calls "
                       f"({', '.join(c.name for c in calls)}); a scripted step answers with one")
    if calls:
        step: dict[str, Any] = {"call": calls[0].name, "args": dict(calls[0].args or {})}
        return step | ({"text": text} if text else {})
    return {"text": text} if text else None


def _turn_steps(invocation: Invocation, tree: AgentTree, where: str) -> list[tuple[str, dict[str, Any]]]:
    """(agent, step) for every model answer of one invocation, in the order the agents gave them."""
    from google.adk.evaluation.eval_case import IntermediateData, InvocationEvents

    data = invocation.intermediate_data
    steps: list[tuple[str, dict[str, Any]]] = []
    final_author: str | None = None
    final_at: int | None = None  # where the final response was answered among the steps (ADK 2.x marks it)
    custom_texts: set[str] = set()  # what custom (non-LLM) agents said in the turn: ADK 1.x's final response may be one
    if isinstance(data, InvocationEvents):
        last_author, handed_to = None, None
        for number, event in enumerate(data.invocation_events):
            author = event.author
            if author in tree.other_agents:  # a custom agent's own output (an executor's), not a model answer
                if event.content is None:  # ADK 2.x: that agent gave the final response; running it gives it again
                    final_author = author
                else:
                    custom_texts.add(_text(event.content) or "")
                continue
            if author not in tree.llm_agents:
                raise CaseRefused(f"{where}, event {number}: author {author!r} is not an LlmAgent of the target "
                               f"(its LlmAgents: {', '.join(tree.llm_agents) or 'none'}). Fix: import with the "
                               f"--target the eval set was recorded on")
            if event.content is None:  # ADK 2.x: the final response's event, its text on final_response
                final_author, final_at = author, len(steps)
                continue
            step = _answer_step(event.content, where=f"{where}, event {number}")
            if step is not None:
                steps.append((author, step))
                handed_to = next((str(c.args.get("agent_name")) for c in _calls(event.content)
                                  if c.name == TRANSFER and c.args), handed_to)
            last_author = author
        if final_author is None:  # ADK 1.x left the final event out: the agent last handed the turn
            final_author = handed_to if handed_to in tree.llm_agents else last_author
    elif isinstance(data, IntermediateData) and (data.tool_uses or data.intermediate_responses):
        if len(tree.llm_agents) != 1:
            raise CaseRefused(f"{where}: the trajectory names no author for its tool calls (IntermediateData) and the "
                           f"target has {len(tree.llm_agents)} LlmAgents ({', '.join(tree.llm_agents)}). Fix: "
                           f"record the eval set again with ADK (it stores each event's author)")
        only = tree.llm_agents[0]
        steps += [(only, {"call": c.name, "args": dict(c.args or {})}) for c in data.tool_uses]
        final_author = only
    if invocation.final_response is not None and final_author not in tree.other_agents:
        text = _text(invocation.final_response)
        if text and text in custom_texts:
            return steps  # a custom agent's output, not a model's answer: not scripted
        if text:
            author = final_author or tree.first
            if author is None:
                raise CaseRefused(f"{where}: the final response names no author and the target's turn starts with "
                               f"no LlmAgent to give it to")
            # At its place: in a LoopAgent's turn the answer ADK took as final may come before later tool calls
            # (an exit tool's response ends the turn without text); after them, the replay would end the turn early.
            steps.insert(len(steps) if final_at is None else final_at, (author, {"text": text}))
    return steps


def bookkeeping_invocation(invocation: Invocation) -> bool:
    """An invocation with no user message, no final response and no event a conversion kept: what a target's own
    turn function appends outside its agents' turns (ADK gives it an invocation of its own)."""
    events = getattr(invocation.intermediate_data, "invocation_events", None)
    has_trajectory = bool(events) or bool(getattr(invocation.intermediate_data, "tool_uses", None))
    return not (invocation.user_content and invocation.user_content.parts) and invocation.final_response is None \
        and not has_trajectory


def scenario_from_case(case: EvalCase, tree: AgentTree, *, source: str, name: str, exact_state: bool,
                       profile: str | None, target: str | None = None) -> dict[str, Any]:
    """The scenario mapping of one case (raises ``CaseRefused`` with the reason when it cannot be faithful)."""
    if case.conversation_scenario is not None:
        raise CaseRefused("a conversation_scenario: a user simulator plays the user, so there is no fixed "
                       "conversation to replay. Fix: run it with `adk eval` once and import the static "
                       "conversation it produced")
    turns, script = [], {}
    for number, invocation in enumerate(case.conversation or ()):
        where = f"invocation {number}"
        message = _text(invocation.user_content)
        if not message and bookkeeping_invocation(invocation):
            continue  # the target's own appends between turns (a history fold): no user message, no answer
        if not message:
            raise CaseRefused(f"{where}: the user's message is not text (a scenario's turns are text)")
        turns.append({"user": message})
        for agent, step in _turn_steps(invocation, tree, where):
            script.setdefault(agent, []).append(step)
    if not turns:
        raise CaseRefused("the conversation has no invocation")
    session: dict[str, Any] = {"user": "user_1", "turns": turns}
    app_note = ""
    if case.session_input is not None:
        session["user"] = case.session_input.user_id or "user_1"
        if case.session_input.state:
            session["initial_state"] = dict(case.session_input.state)
        app_note = f" (app {case.session_input.app_name})" if case.session_input.app_name else ""
    scenario: dict[str, Any] = {"name": name, "description": f"ADK eval case {case.eval_id!r} of {source}{app_note}."}
    scenario |= {"target": target} if target else {}
    scenario |= {"profile": profile} if profile else {}
    scenario |= {"sessions": [session], "script": script}
    expect: dict[str, Any] = {}
    drawn = run_drawn_keys(case)
    if case.final_session_state:
        expect["state"] = {k: v for k, v in case.final_session_state.items() if k not in drawn}
        expect["state_match"] = "exact" if exact_state and not drawn else "subset"
    if expect:
        scenario["expect"] = expect
    scenario["tags"] = ["imported", "adk-evalset"]
    return scenario


def run_drawn_keys(case: EvalCase) -> list[str]:
    """The keys of ``final_session_state`` that ``export evalset`` normalised (an id, a time or a temporary path the
    run drew): another run holds other values there, so they are not expected."""
    return [k for k, v in (case.final_session_state or {}).items() if holds_placeholder(k) or holds_placeholder(v)]


def _run_drawn_note(case: EvalCase, exact_state: bool) -> tuple[str, ...]:
    drawn = run_drawn_keys(case)
    if not drawn:
        return ()
    exact = " (so the state is compared as a subset, not --exact-state)" if exact_state else ""
    return (f"final_session_state key(s) {', '.join(map(repr, drawn))} hold values the recorded run drew afresh "
            f"(ids, times, temporary paths, normalised by export): not expected{exact}",)


def import_eval_sets(path: Path, tree: AgentTree, *, exact_state: bool = False, profile: str | None = None,
                     target: str | None = None, taken: Iterable[str] = (),
                     sub_lm: Path | None = None) -> tuple[list[Imported], list[Refusal]]:
    """Every case of every eval set file at ``path``: the scenarios, and the cases refused with their reasons.
    Names are ``<file stem>_<eval id>`` made slugs, unique against ``taken`` and each other. ``sub_lm``: a file of
    the sub-model's answers (``load_sub_model_answers``) for cases whose code calls it."""
    answers = load_sub_model_answers(sub_lm) if sub_lm is not None else None
    imported: list[Imported] = []
    refused: list[Refusal] = []
    used = set(taken)
    for file in eval_set_files(path):
        eval_set = load_eval_set(file)
        stem = slug(file.name.removesuffix(".json").removesuffix(".evalset").removesuffix(".test"))
        for case in eval_set.eval_cases:
            source = f"{file}: eval case {case.eval_id!r}"
            name = _unique(f"{stem}_{slug(case.eval_id)}", used)
            try:
                scenario = scenario_from_case(case, tree, source=file.name, name=name, exact_state=exact_state,
                                              profile=profile, target=target)
            except CaseRefused as exc:
                refused.append(Refusal(source, str(exc)))
                continue
            used.add(name)
            imported.append(with_sub_model(Imported(name, source, scenario, _run_drawn_note(case, exact_state)),
                                            case.eval_id, answers, sub_lm))
    return imported, refused


def _unique(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    return next(f"{name}_{n}" for n in range(2, 10_000) if f"{name}_{n}" not in used)


def agent_tree(app: Any) -> AgentTree:
    """The target's agents as attribution needs them."""
    from google.adk.agents import LlmAgent

    agents: list[Any] = []
    stack = [app.root_agent]
    while stack:
        agent = stack.pop(0)
        agents.append(agent)
        stack.extend(getattr(agent, "sub_agents", None) or ())
    llm = tuple(a.name for a in agents if isinstance(a, LlmAgent))
    other = tuple(a.name for a in agents if not isinstance(a, LlmAgent))
    first = next((a.name for a in agents if isinstance(a, LlmAgent)), None)
    return AgentTree(llm_agents=llm, first=first, other_agents=other)
