"""ADK's own expectation of an imported ``adk conformance`` case: the session equals the one ADK recorded."""

from __future__ import annotations

from typing import Any

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, show

NAME = "adk_recording_matches"
# The fields ADK's replay validator leaves out, as google/adk/cli/conformance/_replay_validators.py lists them
# (a private module, so written out here): what differs between two runs of the same conversation.
EVENT_EXCLUDED: dict[str, Any] = {
    "id": True, "timestamp": True, "invocation_id": True, "long_running_tool_ids": True, "node_info": True,
    "content": {"parts": {"__all__": {"thought_signature": True, "function_call": {"id": True},
                                      "function_response": {"id": True}}}},
    "actions": {"state_delta": {"_adk_recordings_config": True, "_adk_replay_config": True},
                "requested_auth_configs": True, "requested_tool_confirmations": True},
}
SESSION_EXCLUDED: dict[str, Any] = {"id": True, "last_update_time": True, "events": True,
                                    "state": {"_adk_recordings_config": True, "_adk_replay_config": True}}


def _differences(actual: Any, recorded: Any, where: str) -> list[str]:
    """Where two dumps differ, one line per leaf (first few)."""
    if isinstance(actual, dict) and isinstance(recorded, dict):
        out = []
        for key in sorted(set(actual) | set(recorded), key=str):
            if key not in actual:
                out.append(f"{where}.{key}: recorded {show(recorded[key], 80)}, the run has none")
            elif key not in recorded:
                out.append(f"{where}.{key}: the run has {show(actual[key], 80)}, the recording none")
            else:
                out += _differences(actual[key], recorded[key], f"{where}.{key}")
        return out
    if isinstance(actual, list) and isinstance(recorded, list) and len(actual) == len(recorded):
        return [line for i, (a, r) in enumerate(zip(actual, recorded)) for line in _differences(a, r, f"{where}[{i}]")]
    return [] if actual == recorded else [f"{where}: recorded {show(recorded, 80)}, the run has {show(actual, 80)}"]


@check(
    NAME,
    title="The session equals ADK's recording",
    why="An `adk conformance` case carries what ADK recorded when the conversation ran (generated-session.yaml). "
        "Replayed here offline, the run's session must be the same — every event, its author, content, actions "
        "and state delta, and the final state — with the fields ADK's own replay ignores left out (ids, "
        "timestamps, invocation ids, function-call ids, thought signatures, its recording configuration).",
    dod_item="issue 33: ADK's own expectations of an imported adk conformance case",
)
def adk_recording_matches(ctx: CheckContext) -> CheckResult:
    from google.adk.sessions import Session

    recorded_json = ctx.scenario.expect.adk_session
    if recorded_json is None:
        return not_applicable(NAME, "The scenario carries no ADK recording (expect.adk_session: set by `import "
                                    "adk-conformance`).")
    session_id = ctx.scenario.session_id(len(ctx.scenario.sessions) - 1)
    actual_json = ctx.trace.adk_sessions.get(session_id)
    if actual_json is None:
        return failed(NAME, "The run kept no session to compare with ADK's recording.",
                      [f"session {session_id}: the session service returned none at the end of the run"])
    actual, recorded = Session.model_validate(actual_json), Session.model_validate(recorded_json)
    problems = _differences(actual.model_dump(mode="json", exclude_none=True, exclude=SESSION_EXCLUDED),
                            recorded.model_dump(mode="json", exclude_none=True, exclude=SESSION_EXCLUDED), "session")
    if len(actual.events) != len(recorded.events):
        problems.append(f"session {session_id}: the run has {len(actual.events)} event(s), the recording "
                        f"{len(recorded.events)}")
    for index, (mine, theirs) in enumerate(zip(actual.events, recorded.events)):
        dumps = [e.model_dump(mode="json", exclude_none=True, exclude=EVENT_EXCLUDED) for e in (mine, theirs)]
        problems += _differences(dumps[0], dumps[1], f"event #{index} (author {theirs.author})")
    if problems:
        return failed(NAME, f"The session differs from ADK's recording in {len(problems)} place(s).",
                      capped(problems))
    return passed(NAME, f"Session {session_id} equals ADK's recording: {len(recorded.events)} event(s) and the "
                        f"final state.")
