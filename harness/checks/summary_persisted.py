"""(b) After each results_processor run that followed an execution, the summary is in a persisted row."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_row
from .timeline import execution_windows, rows_by_event

NAME = "summary_persisted"


@check(
    NAME,
    title="Durable handoff: the summary is persisted",
    why="The analyst must get the results through session state, not through prompt history: each "
        "results_processor run after an execution must leave the summary key in a persisted event row "
        "(state_delta_json), written by results_processor, after the job_builder row of that execution.",
    dod_item="000: after results_processor runs, events.state_delta_json contains rlm:last_results_summary",
)
def summary_persisted(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    windows = execution_windows(trace, profile)
    if not windows:
        return not_applicable(NAME, "No execution happened (no job_builder event with a state delta).")
    processed = [w for w in windows if w.runs]
    if not processed:
        return not_applicable(NAME, f"{len(windows)} execution(s), but no results_processor run followed any "
                                    f"(see processor_model_runs and stage_gating).")
    rows = rows_by_event(trace)
    problems: list[str] = []
    found: list[str] = []
    for window in processed:
        execution = window.execution
        located = rows.get(execution.index)
        if located is None:
            snapshot = trace.final_persisted(execution.session_id)
            where = "no persisted snapshot" if snapshot is None else "no matching row in its last snapshot"
            problems.append(f"{name_event(execution)}: execution has {where} of session {execution.session_id}; "
                            "cannot tell whether the summary was persisted after it")
            continue
        snapshot, start_row = located
        end_seq = None
        if window.next_execution is not None and window.next_execution.index in rows:
            end_seq = rows[window.next_execution.index][1].seq
        summary_rows = [r for r in snapshot.events
                        if r.author == profile.results_processor and profile.summary_key in r.state_delta
                        and r.seq > start_row.seq and (end_seq is None or r.seq < end_seq)]
        if summary_rows:
            found.append(f"{name_row(snapshot, summary_rows[-1])} holds {profile.summary_key!r} "
                         f"(after {name_row(snapshot, start_row)})")
            continue
        elsewhere = [r for r in snapshot.events if profile.summary_key in r.state_delta
                     and r.seq > start_row.seq and (end_seq is None or r.seq < end_seq)]
        hint = ("; it is only in rows by other authors: "
                + ", ".join(f"seq {r.seq} (author {r.author})" for r in elsewhere)) if elsewhere else ""
        problems.append(
            f"{name_event(execution)} was processed by {name_event(window.runs[0].first)}, but no "
            f"{profile.results_processor} row after {name_row(snapshot, start_row)}"
            f"{'' if end_seq is None else f' and before seq {end_seq}'} holds {profile.summary_key!r}{hint}")
    if problems:
        return failed(NAME, f"{len(problems)} of {len(processed)} processed execution(s) have no persisted "
                            f"{profile.summary_key!r} from {profile.results_processor}.", capped(problems))
    return passed(NAME, f"Every one of {len(processed)} processed execution(s) left {profile.summary_key!r} "
                        f"in a persisted {profile.results_processor} row.", capped(found))
