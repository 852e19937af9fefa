"""What a replay could not do, in one paragraph each: a request no recording answers, recordings never played.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import CassetteError

if TYPE_CHECKING:
    from vcr.cassette import Cassette
    from vcr.errors import CannotOverwriteExistingCassetteException


# -- after a run -------------------------------------------------------------------------

def assert_all_played(cassette: Cassette, *, scenario: str, rerecord_command: str) -> None:
    """Raise ``CassetteError`` listing every interaction loaded from the file that was never played."""
    from vcr.record_mode import RecordMode

    if cassette.record_mode == RecordMode.ALL or not cassette.rewound:
        return  # everything was (re)recorded in this run; there is nothing to have played
    loaded = getattr(cassette, "_loaded_count", len(cassette))  # new_episodes appends after the loaded ones
    unplayed = [(index, request) for index, request in enumerate(cassette.requests[:loaded])
                if not cassette.play_counts[index]]
    if not unplayed:
        return
    listing = "\n".join(f"  #{index}: {request.method.upper()} {request.path}" for index, request in unplayed)
    raise CassetteError(
        f"Scenario {scenario!r}: {len(unplayed)} of {loaded} interactions in cassette {cassette.path} were "
        f"never played:\n{listing}\nThe run made fewer model calls than when it was recorded (the script, "
        f"the prompts or the agent changed). Re-record the cassette with: {rerecord_command}")


def explain_cassette_miss(exc: CannotOverwriteExistingCassetteException, *, scenario: str, agent_hint: str,
                          call_index: int, rerecord_command: str) -> CassetteError:
    """One paragraph for a request replay could not answer; ``raise explain_cassette_miss(...) from exc``."""
    cassette, request = exc.cassette, exc.failed_request
    asked = f"{request.method.upper()} {request.path}" if request is not None else "a request"
    reason = getattr(exc, "reason", "no_match")
    if reason == "cassette_not_found":
        why = "the cassette file does not exist"
    elif reason == "already_played":
        why = ("every matching recorded interaction was already played, so the run made more model calls than "
               "when it was recorded")
    elif reason == "no_match" and exc.similar_requests:
        differences = "; ".join(f"{name}: {' '.join(str(message).split())}"
                                for name, message in exc.similar_requests[0][2])
        why = f"no recorded interaction matches it (the closest differs in {differences})"
    else:
        why = "the cassette has nothing like it"
    return CassetteError(
        f"Scenario {scenario!r}: model call #{call_index} of {agent_hint} ({asked}) is not in cassette "
        f"{cassette.path}: {why} ({len(cassette)} interactions recorded, {len(cassette.play_counts)} played). "
        f"CI only replays and never records; if the change is intended, re-record with: {rerecord_command}")
