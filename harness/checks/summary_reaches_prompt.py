"""(i) The persisted summary actually reaches the analyst's next prompt."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_request, name_row, show
from .timeline import appended_events, processor_runs, request_positions, rows_by_event, session_of_request

NAME = "summary_reaches_prompt"
LONG_SUMMARY = 500
PREFIX = 200


@check(
    NAME,
    title="The summary reaches the analyst's prompt",
    why="Persisting the summary is not enough: ADK's {key?} templating leaves {rlm:last_results_summary?} "
        "verbatim (only app:/user:/temp: prefixes are templated), so the analyst may never see it. Every analyst "
        "request after the summary was written (profile summary_key, by summary_author or results_processor) "
        "must carry the latest persisted summary in its system instruction: "
        "the conversation history may quote the processor's answer, but that is not the agent handing it over "
        "(history is cut, folded or absent in a new session).",
    dod_item="design: the handoff reaches the prompt (what seed 000 missed)",
)
def summary_reaches_prompt(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    reason = profile.unmapped("summary_key", "analyst")
    if reason:
        return not_applicable(NAME, f"No summary handoff to follow: {reason}.")
    key, processor, writer_name = profile.summary_key, profile.results_processor, profile.summary_writer

    def writes_summary(event) -> bool:
        return key in event.emitted_delta and (writer_name is None or event.author == writer_name)

    # After one of these, the analyst's next request must show the summary. A processor's run, as stage_gating
    # counts them: an event of it that holds no text or call (its callback gated it, a plugin wrote a delta) is
    # the processor not running, and no summary is owed.
    ran = {e.index for run in processor_runs(trace, profile) for e in run.events}

    def triggers(event) -> bool:
        return event.index in ran if processor is not None else writes_summary(event)

    after = (f"a {processor} run" if processor is not None
             else f"a {writer_name} write of {key!r}" if writer_name is not None else f"a write of {key!r}")
    positions = request_positions(trace)
    rows = rows_by_event(trace)
    events = appended_events(trace)
    checked: list[str] = []
    problems: list[str] = []
    for request in sorted(trace.requests_of(profile.analyst), key=lambda r: r.index):
        position = positions.get(request.index)
        session = session_of_request(trace, request)
        if position is None or session is None:
            continue
        before = [e for e in events if e.session_id == session and e.index < position]
        if not any(triggers(e) for e in before):
            continue
        writers = [e for e in before if writes_summary(e)]
        if not writers:
            problems.append(f"{name_request(request)} follows a {processor} run, but no "
                            f"{key!r} was written before it (see summary_persisted)")
            continue
        writer = writers[-1]
        located = rows.get(writer.index)
        if located is not None and key in located[1].state_delta:
            summary, source = located[1].state_delta[key], name_row(*located)
        else:
            summary, source = writer.emitted_delta[key], f"{name_event(writer)} (not persisted)"
        needle = str(summary if summary is not None else "").strip()
        if len(needle) > LONG_SUMMARY:
            needle = needle[:PREFIX]
        if needle in request.system_instruction:
            checked.append(f"{name_request(request)} carries the summary from {source} in its instruction")
        elif needle in request.contents_text:
            problems.append(f"{name_request(request)}: its system_instruction does not hold the summary "
                            f"{show(needle)} persisted by {source}; it is only in the contents (the conversation "
                            f"history quoting the processor's answer), not given by the agent's instruction")
        else:
            problems.append(f"{name_request(request)}: neither its system_instruction nor its contents holds the "
                            f"summary {show(needle)} persisted by {source}")
    if not checked and not problems:
        return not_applicable(NAME, f"No {profile.analyst} request follows {after}.")
    if problems:
        return failed(NAME, f"{len(problems)} {profile.analyst} request(s) after a summary do not show it.",
                      capped(problems))
    return passed(NAME, f"All {len(checked)} {profile.analyst} request(s) after a summary carry the latest one.",
                  capped(checked))
