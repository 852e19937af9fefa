"""(b) After each execution that was summarised, the summary is in a persisted row of its writer."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_row
from .timeline import execution_source, execution_windows, executions_unmapped, rows_by_event, unmapped_all

NAME = "summary_persisted"


@check(
    NAME,
    title="Durable handoff: the summary is persisted",
    why="The analyst must get the results through session state, not through prompt history: each execution "
        "that was summarised must leave the summary key (profile summary_key) in a persisted event row "
        "(state_delta_json), written by the summary writer (profile summary_author, else results_processor), at "
        "or after the executor's row of that execution and before the next execution.",
    dod_item="000: after results_processor runs, events.state_delta_json contains rlm:last_results_summary",
)
def summary_persisted(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    reason = (profile.unmapped("summary_key") or unmapped_all(profile, "summary_author", "results_processor")
              or executions_unmapped(profile))
    if reason:
        return not_applicable(NAME, f"Cannot tell where the summary belongs: {reason}.")
    writer, key = profile.summary_writer, profile.summary_key
    windows = execution_windows(trace, profile)
    if not windows:
        return not_applicable(NAME, f"No execution happened (looked for {execution_source(profile)}).")
    if profile.results_processor is not None:
        # The processor summarises: executions it never ran after are stage_gating's and processor_model_runs'.
        judged = [w for w in windows if w.runs]
        if not judged:
            return not_applicable(NAME, f"{len(windows)} execution(s), but no {profile.results_processor} run "
                                        f"followed any (see processor_model_runs and stage_gating).")
    else:
        judged = windows  # the summary writer (e.g. the executor itself) summarises every execution
    rows = rows_by_event(trace)
    problems: list[str] = []
    found: list[str] = []
    for window in judged:
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

        def in_window(seq: int, start: int = start_row.seq, end: int | None = end_seq) -> bool:
            return seq >= start and (end is None or seq < end)

        # A writer other than the execution's author has rows of its own, strictly after the execution's.
        from_on = "at or after" if start_row.author == writer else "after"
        summary_rows = [r for r in snapshot.events
                        if r.author == writer and key in r.state_delta and in_window(r.seq)]
        if summary_rows:
            found.append(f"{name_row(snapshot, summary_rows[-1])} holds {key!r} "
                         f"({from_on} {name_row(snapshot, start_row)})")
            continue
        elsewhere = [r for r in snapshot.events if key in r.state_delta and in_window(r.seq)]
        hint = ("; it is only in rows by other authors: "
                + ", ".join(f"seq {r.seq} (author {r.author})" for r in elsewhere)) if elsewhere else ""
        how = (f"was processed by {name_event(window.runs[0].first)}, but" if window.runs
               else "was executed, but")
        problems.append(
            f"{name_event(execution)} {how} no {writer} row {from_on} {name_row(snapshot, start_row)}"
            f"{'' if end_seq is None else f' and before seq {end_seq}'} holds {key!r}{hint}")
    what = "processed" if profile.results_processor is not None else "summarised"
    if problems:
        return failed(NAME, f"{len(problems)} of {len(judged)} {what} execution(s) have no persisted "
                            f"{key!r} from {writer}.", capped(problems))
    return passed(NAME, f"Every one of {len(judged)} {what} execution(s) left {key!r} "
                        f"in a persisted {writer} row.", capped(found))
