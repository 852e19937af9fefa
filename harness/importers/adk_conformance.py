"""``adk conformance`` cases -> scenarios that replay ADK's recordings in-process, offline, with no ``adk web``.

A case is a folder (``tests/<category>/<name>/``) with ADK's ``spec.yaml`` (``TestSpec``: the agent, the initial
state, the user messages with their state deltas) and what ``adk conformance record`` wrote beside it:
``generated-recordings.yaml`` (every model call of every agent, request and response, in order) and
``generated-session.yaml`` (the session at the end). The scenario:

* its session: ADK's conformance user (``adk_conformance_test_user``), the spec's ``initial_state``;
* a turn per user message, its ``state_delta`` sent with it;
* per agent, the recorded model responses in order, each served verbatim (a ``response`` step: content,
  finish reason, usage metadata and model version as recorded); the agents' tools run for real;
* ``expect.adk_session``: the recorded session, which check ``adk_recording_matches`` compares with the run's,
  leaving out the fields ADK's own replay leaves out.

The non-streaming recording is used; a case recorded only with SSE uses its final (non-partial) responses. A
case that cannot be replayed this way is refused with the reason: no recording yet, a user message that is not
text (a function response for a long-running tool), an agent that is not the target's app.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .evalset import AgentTree, CaseRefused, EvalSetError, Imported, Refusal, slug

SPEC = "spec.yaml"
VARIANTS = (("generated-recordings.yaml", "generated-session.yaml"),
            ("generated-recordings-sse.yaml", "generated-session-sse.yaml"))
CONFORMANCE_USER = "adk_conformance_test_user"
"""The user id ``adk conformance record`` creates its sessions for."""


@dataclass(frozen=True)
class Case:
    folder: Path
    name: str


def find_cases(root: Path) -> list[Case]:
    """Every folder under ``root`` (or ``root`` itself) holding a ``spec.yaml``, named by its path."""
    if not root.exists():
        raise EvalSetError(f"{root}: no such folder. Fix: name the folder of ADK conformance cases (the one "
                           f"`adk conformance record` was given).")
    if (root / SPEC).is_file():
        return [Case(root, slug(root.name))]
    specs = sorted(root.rglob(SPEC))
    if not specs:
        raise EvalSetError(f"{root}: no {SPEC} under it. Fix: name a folder of ADK conformance cases "
                           f"(<category>/<name>/{SPEC}).")
    return [Case(spec.parent, slug("_".join(spec.parent.relative_to(root).parts))) for spec in specs]


def _yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CaseRefused(f"{path.name} cannot be read ({type(exc).__name__}: {exc})") from None


def _validated(model: Any, path: Path) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(_yaml(path) or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CaseRefused(f"{path.name}: field '{field}': {first['msg']} (one of {exc.error_count()} problem(s)); "
                          f"it is not what ADK writes there") from None


def response_json(response: Any) -> dict[str, Any]:
    """The GenerateContentResponse an ``LlmResponse`` was made from (``LlmResponse.create``'s inverse), as JSON."""
    from google.genai import types

    candidate = types.Candidate(content=response.content, finish_reason=response.finish_reason,
                                grounding_metadata=response.grounding_metadata,
                                citation_metadata=response.citation_metadata, avg_logprobs=response.avg_logprobs,
                                logprobs_result=response.logprobs_result, finish_message=response.error_message)
    full = types.GenerateContentResponse(candidates=[candidate], usage_metadata=response.usage_metadata,
                                         model_version=response.model_version)
    return full.model_dump(mode="json", by_alias=True, exclude_none=True)


def scenario_from_case(case: Case, tree: AgentTree, *, app_name: str, profile: str | None,
                       target: str | None = None) -> dict[str, Any]:
    from google.adk.cli.conformance.test_case import TestSpec
    from google.adk.cli.plugins.recordings_schema import Recordings
    from google.adk.sessions import Session

    spec = _validated(TestSpec, case.folder / SPEC)
    if spec.agent != app_name:
        raise CaseRefused(f"{SPEC}: agent {spec.agent!r} is not the target's app ({app_name!r}); ADK's recording "
                          f"compares the session's app name. Fix: import with the --target of that agent")
    variant = next(((r, s) for r, s in VARIANTS if (case.folder / r).is_file() and (case.folder / s).is_file()), None)
    if variant is None:
        raise CaseRefused(f"no recording next to {SPEC} ({VARIANTS[0][0]} and {VARIANTS[0][1]}). Fix: run `adk "
                          f"conformance record {case.folder}` once")
    recordings = _validated(Recordings, case.folder / variant[0])
    recorded = _validated(Session, case.folder / variant[1])
    turns = []
    for index, message in enumerate(spec.user_messages):
        text = message.text if message.text is not None else "".join(
            p.text or "" for p in (message.content.parts if message.content else ()) if p.text)
        if message.content is not None and any(p.text is None for p in message.content.parts or ()):
            raise CaseRefused(f"{SPEC}: user_messages[{index}] carries more than text (e.g. a function response for "
                              f"a long-running tool); a scenario's turn is a text message")
        turn: dict[str, Any] = {"user": text}
        if message.state_delta:
            turn["state_delta"] = dict(message.state_delta)
        turns.append(turn)
    script: dict[str, list[dict[str, Any]]] = {}
    for number, recording in enumerate(recordings.recordings):
        if recording.llm_recording is None:
            continue  # a tool's call and response: the tool runs for real
        if recording.agent_name not in tree.llm_agents:
            raise CaseRefused(f"{variant[0]}: recordings[{number}] is a model call of {recording.agent_name!r}, "
                              f"not an LlmAgent of the target ({', '.join(tree.llm_agents)})")
        final = [r for r in recording.llm_recording.llm_responses or () if not r.partial]
        if not final:
            raise CaseRefused(f"{variant[0]}: recordings[{number}] holds no complete model response")
        script.setdefault(recording.agent_name, []).append({"response": response_json(final[-1])})
    if not turns:
        raise CaseRefused(f"{SPEC}: no user_messages")
    session: dict[str, Any] = {"user": CONFORMANCE_USER, "turns": turns}
    if spec.initial_state:
        session["initial_state"] = dict(spec.initial_state)
    scenario: dict[str, Any] = {"name": case.name, "description": spec.description.strip() or case.name}
    scenario |= {"target": target} if target else {}
    scenario |= {"profile": profile} if profile else {}
    return scenario | {"sessions": [session], "script": script,
                       "expect": {"adk_session": recorded.model_dump(mode="json", exclude_none=True)},
                       "tags": ["imported", "adk-conformance"] + (["sse"] if "sse" in variant[0] else [])}


def import_cases(root: Path, tree: AgentTree, *, app_name: str, profile: str | None = None,
                 target: str | None = None, taken: set[str] | frozenset[str] = frozenset()
                 ) -> tuple[list[Imported], list[Refusal]]:
    imported, refused = [], []
    used = set(taken)
    for case in find_cases(root):
        name = case.name if case.name not in used else next(
            f"{case.name}_{n}" for n in range(2, 10_000) if f"{case.name}_{n}" not in used)
        try:
            scenario = scenario_from_case(Case(case.folder, name), tree, app_name=app_name, profile=profile,
                                          target=target)
        except CaseRefused as exc:
            refused.append(Refusal(f"{case.folder}", str(exc)))
            continue
        used.add(name)
        imported.append(Imported(name, str(case.folder / SPEC), scenario))
    return imported, refused
