"""`adk test` fixtures (``<agent dir>/tests/*.json``, ADK 2.x's ``google.adk.cli.agent_test_runner``) -> scenarios that
replay them offline, with no key.

A fixture is a session dump (camelCase, as ``rebuild_tests`` writes it): ``events``, ``state``, ``userId``, optionally
``mocks`` (values ``random.random``/``random.randint`` return). ADK's runner replays it by serving the stored model
contents (every ``role: model`` event, in order) through a mock patched onto ``BaseLlm``, re-sending each user
message, and comparing the event lists, ``actions.stateDelta`` included. The scenario:

* a turn per user event with text and no ``nodeInfo.path`` (an agent-emitted user event carries one);
* per agent, the stored model contents in order, each served verbatim (a ``response`` step, made as ADK's mock makes
  an ``LlmResponse`` of it) — the same selection ADK's runner makes: not the content following a
  ``set_model_response`` response, not a request for confirmation/credentials ADK itself emits; a custom (non-LLM)
  agent's content is its own output, not scripted (running it gives it again); the agents' tools run for real;
* ``initial_state``: what the fixture's ``state`` holds that no event wrote (as ``capture`` takes it);
* ``expect.state``: the state the events' deltas leave (``subset``); ``temp:`` keys are never stored, and a key whose
  last delta is ``null`` is left out (ADK's services disagree on whether ``null`` stores or deletes).

What a fixture does not hold: the sub-model's answers to executed code that calls ``llm_query`` (named per scenario,
given with ``--sub-lm``, as for eval sets), the model answers of an agent run as a tool (``AgentTool``: its own
session; named per scenario), artifacts. Refused, one by one with the reason: a fixture ADK marks
``_xfail``, one with ``mocks`` (a scenario cannot fix what ``random`` returns), a user message that is not text (a
function response to a long-running tool), a model content of an author that is not an agent of the target.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .adk_conformance import response_json
from .capture import initial_state
from .evalset import AgentTree, CaseRefused, EvalSetError, Imported, Refusal, slug, with_sub_model
from .sub_model import load_sub_model_answers

SET_MODEL_RESPONSE = "set_model_response"  # ADK's SetModelResponseTool.NAME: the content after its response is ADK's
ADK_EMITTED_CALLS = ("adk_request_confirmation", "adk_request_credential")  # asked by ADK, not by the model
TEST_USER = "test_user"  # the user ADK's runner creates its sessions for


@dataclass(frozen=True)
class Fixture:
    agent_dir: Path
    file: Path


def find_fixtures(root: Path) -> list[Fixture]:
    """Every ``tests/*.json`` under ``root`` in an agent folder, found as `adk test` finds them."""
    from adk_compat import adk_test_files

    if not root.is_dir():
        raise EvalSetError(f"{root}: no such folder. Fix: name the folder `adk test` is given (agent folders with "
                           f"tests/*.json fixtures).")
    found = sorted((Fixture(agent, file) for agent, file in adk_test_files(root)), key=lambda f: str(f.file))
    if not found:
        raise EvalSetError(f"{root}: no tests/*.json in an agent folder (one with agent.py, __init__.py or "
                           f"root_agent.yaml) under it. Fix: name the folder `adk test` is given.")
    return found


def _user_text(event: dict[str, Any], where: str) -> str | None:
    """The user's message an event carries (None for an event that is not the user's own message)."""
    if event.get("author") != "user" or (event.get("nodeInfo") or {}).get("path"):
        return None
    parts = (event.get("content") or {}).get("parts") or []
    if not parts:
        return None
    if any("text" not in part for part in parts):
        kinds = sorted({key for part in parts for key in part if key != "text"})
        raise CaseRefused(f"{where}: the user's message carries {', '.join(kinds)} (e.g. a function response to a "
                          f"long-running tool); a scenario's turn is a text message")
    return "".join(part["text"] for part in parts)


def served_model_contents(events: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(index, event) of each stored model content ADK's runner serves, in order (its own selection)."""
    served, after_set_model_response = [], False
    for index, event in enumerate(events[1:], start=1):
        content = event.get("content") or {}
        parts = content.get("parts") or []
        if content.get("role") == "user":
            after_set_model_response |= any((p.get("functionResponse") or {}).get("name") == SET_MODEL_RESPONSE
                                            for p in parts)
        elif content.get("role") == "model":
            if after_set_model_response:
                after_set_model_response = False
                continue
            if any((p.get("functionCall") or {}).get("name") in ADK_EMITTED_CALLS for p in parts):
                continue
            served.append((index, event))
    return served


def _final_state(start: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    state = dict(start)
    for event in events:
        state.update(((event.get("actions") or {}).get("stateDelta") or {}))
    return {k: v for k, v in state.items() if v is not None and not k.startswith("temp:")}


def scenario_from_fixture(data: Any, tree: AgentTree, *, name: str, source: str, profile: str | None,
                          target: str | None = None) -> dict[str, Any]:
    """The scenario mapping of one fixture (raises ``CaseRefused`` with the reason when it cannot be faithful)."""
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from pydantic import ValidationError

    if not isinstance(data, dict) or not isinstance(data.get("events"), list) or not data["events"]:
        raise CaseRefused("no events (a fixture is a session dump with an 'events' list). Fix: `adk test --rebuild` "
                          "writes them")
    if data.get("mocks"):
        raise CaseRefused(f"'mocks' fixes what {', '.join(sorted(data['mocks']))} return(s) during ADK's replay; a "
                          f"scenario cannot. Fix: make the agent's randomness a tool the script can drive")
    events = data["events"]
    if _user_text(events[0], "events[0]") is None:
        raise CaseRefused("events[0] is not the user's text message (ADK's runner skips such a fixture too)")
    turns = []
    for index, event in enumerate(events):
        text = _user_text(event, f"events[{index}]")
        if text is not None:
            turns.append({"user": text})
    script: dict[str, list[dict[str, Any]]] = {}
    for index, event in served_model_contents(events):
        author = event.get("author")
        if author in tree.other_agents:
            continue  # a custom agent's own output: running it gives it again
        if author not in tree.llm_agents:
            raise CaseRefused(f"events[{index}]: model content of {author!r}, not an LlmAgent of the target (its "
                              f"LlmAgents: {', '.join(tree.llm_agents) or 'none'}). Fix: import with the --target "
                              f"of the agent folder the fixture belongs to")
        try:
            content = types.Content.model_validate(event["content"])
        except ValidationError as exc:
            raise CaseRefused(f"events[{index}].content: not a Content ({exc.errors()[0]['msg']})") from None
        script.setdefault(author, []).append({"response": response_json(LlmResponse(content=content))})
    stored = SimpleNamespace(state=dict(data.get("state") or {}), app_state=None, user_state=None,
                             events=[SimpleNamespace(state_delta=(e.get("actions") or {}).get("stateDelta") or {})
                                     for e in events])
    start = initial_state(stored)
    session: dict[str, Any] = {"user": data.get("userId") or TEST_USER, "turns": turns}
    session |= {"initial_state": start} if start else {}
    scenario: dict[str, Any] = {"name": name, "description": f"`adk test` fixture {source} ({len(events)} events)."}
    scenario |= {"target": target} if target else {}
    scenario |= {"profile": profile} if profile else {}
    scenario |= {"sessions": [session], "script": script}
    final = _final_state(start, events)
    if final:
        scenario["expect"] = {"state": final, "state_match": "subset"}
    return scenario | {"tags": ["imported", "adk-test"]}


def nested_callers(scenario: dict[str, Any], nested_agents: Iterable[str]) -> list[str]:
    """The scripted answers (``agent[step]``) that call an agent run as a tool (``AgentTool``): that agent runs in a
    session of its own, so its model answers are in no fixture."""
    nested = set(nested_agents)
    return [f"{agent}[{number}] -> {part['functionCall']['name']}" for agent, steps in scenario["script"].items()
            for number, step in enumerate(steps) for candidate in step["response"].get("candidates", ())
            for part in (candidate.get("content") or {}).get("parts") or ()
            if (part.get("functionCall") or {}).get("name") in nested]


def import_fixtures(root: Path, tree: AgentTree, *, profile: str | None = None, target: str | None = None,
                    taken: set[str] | frozenset[str] = frozenset(), sub_lm: Path | None = None,
                    nested_agents: Iterable[str] = ()) -> tuple[list[Imported], list[Refusal]]:
    """Every fixture under ``root``: the scenarios (named ``<agent folder>_<fixture stem>``), and the fixtures
    refused with their reasons. ``sub_lm``: the sub-model's answers for fixtures whose code calls it;
    ``nested_agents``: the target's LlmAgents run as tools (their answers are named in a note)."""
    answers = load_sub_model_answers(sub_lm) if sub_lm is not None else None
    imported, refused = [], []
    used = set(taken)
    for fixture in find_fixtures(root):
        source = f"{fixture.agent_dir.name}/tests/{fixture.file.name}"
        if fixture.file.stem.endswith("_xfail"):
            refused.append(Refusal(str(fixture.file), "ADK expects this fixture to fail (_xfail): no run to replay"))
            continue
        stem = slug(f"{fixture.agent_dir.name}_{fixture.file.stem}")
        name = stem if stem not in used else next(f"{stem}_{n}" for n in range(2, 10_000) if f"{stem}_{n}" not in used)
        try:
            try:
                data = json.loads(fixture.file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise CaseRefused(f"cannot be read as JSON ({exc})") from None
            scenario = scenario_from_fixture(data, tree, name=name, source=source, profile=profile, target=target)
        except CaseRefused as exc:
            refused.append(Refusal(str(fixture.file), str(exc)))
            continue
        used.add(name)
        item = with_sub_model(Imported(name, str(fixture.file), scenario), fixture.file.stem, answers, sub_lm)
        calls = nested_callers(scenario, nested_agents)
        if calls:
            item = dataclasses.replace(item, notes=(*item.notes, (
                f"{', '.join(calls)}: an agent run as a tool answers in a session of its own, whose model answers no "
                f"fixture holds; the run stops at its first call. Fix: add its answers to the scenario's script "
                f"under its name")))
        imported.append(item)
    return imported, refused
