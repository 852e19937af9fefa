"""The results processor's model really runs after each execution, and its answer is the persisted summary."""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_request, name_row, show
from .timeline import (execution_source, execution_windows, executions_unmapped, request_positions, response_to,
                       rows_by_event)

NAME = "processor_model_runs"


@check(
    NAME,
    title="The results processor's model writes the summary",
    why="A before_agent_callback that returns Content skips the agent: its model is never called and the "
        "returned content (the raw injected results) becomes the output_key value. After every execution "
        "the results processor (profile results_processor) must send a model request, and the persisted summary "
        "must be its model's answer (when it is the summary's writer).",
    dod_item="design: inject results via before_model_callback, not by returning Content from before_agent",
)
def processor_model_runs(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    reason = profile.unmapped("results_processor") or executions_unmapped(profile)
    if reason:
        return not_applicable(NAME, f"No results processor to judge: {reason}.")
    processor, key = profile.results_processor, profile.summary_key
    # The processor's answer is the summary only when it writes it (no other summary_author, a summary_key).
    compare = key is not None and profile.summary_writer == processor
    windows = execution_windows(trace, profile)
    if not windows:
        return not_applicable(NAME, f"No execution happened (looked for {execution_source(profile)}).")
    positions = request_positions(trace)
    rows = rows_by_event(trace)
    requests = sorted(trace.requests_of(processor), key=lambda r: r.index)
    problems: list[str] = []
    good: list[str] = []
    for window in windows:
        execution = window.execution
        mine = [r for r in requests if r.invocation_id == execution.invocation_id
                and window.contains(positions.get(r.index, float("nan")))]
        writers = [e for run in window.runs for e in run.events if compare and key in e.emitted_delta]
        writer = writers[-1] if writers else None
        if writer is not None and writer.index in rows and key in rows[writer.index][1].state_delta:
            summary, source = rows[writer.index][1].state_delta[key], name_row(*rows[writer.index])
        elif writer is not None:
            summary, source = writer.emitted_delta[key], f"{name_event(writer)} (not persisted)"
        else:
            summary, source = None, None
        if not mine:
            wrote = (f", yet {source} holds summary {show(summary)} — the agent was skipped (a before_agent_callback "
                     f"returning Content?)") if source else " and no summary was written" if compare else ""
            problems.append(f"{name_event(execution)}: {processor} sent no model request after "
                            f"this execution{wrote}")
            continue
        response = response_to(trace, mine[-1])
        if response is None:
            problems.append(f"{name_event(execution)}: {name_request(mine[-1])} got no recorded response")
            continue
        if not compare:
            good.append(f"{name_event(execution)}: {processor}'s model answered {name_request(mine[-1])}")
        elif summary is None:
            problems.append(f"{name_event(execution)}: {processor} answered "
                            f"{show(response.text)} ({name_request(mine[-1])}) but persisted no "
                            f"{key!r}")
        elif str(summary).strip() != response.text.strip():
            problems.append(f"{name_event(execution)}: {source} holds {show(summary)} but the model's last answer "
                            f"({name_request(mine[-1])}) was {show(response.text)}")
        else:
            good.append(f"{name_event(execution)}: summary in {source} is the answer to {name_request(mine[-1])}")
    if problems:
        return failed(NAME, f"{len(problems)} of {len(windows)} execution(s) were not summarised by the processor's "
                            f"model.", capped(problems))
    if not compare:
        whom = (f"the summary is written by {profile.summary_writer}" if key is not None
                else "the profile maps no summary_key")
        return passed(NAME, f"After each of {len(windows)} execution(s) {processor}'s model ran ({whom}, so its "
                            f"answer is not compared with a persisted summary).", capped(good))
    return passed(NAME, f"After each of {len(windows)} execution(s) the processor's model ran and its answer is "
                        f"the persisted summary.", capped(good))
