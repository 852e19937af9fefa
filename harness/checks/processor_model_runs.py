"""The results processor's model really runs after each execution, and its answer is the persisted summary."""

from __future__ import annotations

from ..trace.model import EventRecord, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_request, name_row, show
from .timeline import (ExecutionWindow, appended_events, execution_source, execution_windows, executions_unmapped,
                       request_positions, response_to, rows_by_event)

NAME = "processor_model_runs"


def loop_ended_first(trace: Trace, window: ExecutionWindow, processor: str, analyst: str | None) -> EventRecord | None:
    """The escalation that ended the loop after this execution, before the processor's turn came (ADK's LoopAgent
    runs no further sub-agent of that iteration: an executor that escalates on FINAL), if one did. None once the
    processor or the analyst (a new iteration) has an event: then the processor's turn came, or was passed by."""
    execution = window.execution
    for event in appended_events(trace):
        if (event.session_id, event.invocation_id) != (execution.session_id, execution.invocation_id) \
                or not (event.index == execution.index or window.contains(event.index)):
            continue
        if event.author in (processor, analyst):
            return None
        if event.escalate:
            return event
    return None


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
    if (info := next((a for a in trace.agents if a.name == processor), None)) and info.llm_agent is False:
        return not_applicable(NAME, f"The results_processor {processor} is not an LlmAgent but a {info.kind}: it "
                                    f"makes no model request by design (it digests results in code), so there is no "
                                    f"model answer to check (nothing to fix; stage_gating and the other checks of "
                                    f"the processor still judge its runs).")
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
    ended_first: list[str] = []  # executions after which the loop ended before the processor's turn: not judged
    fed_back = [w for w in windows if w.fed_back(profile)]  # its own model read it (ADK's code executor)
    windows = [w for w in windows if not w.fed_back(profile)]
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
        if not mine and not writers and (ended := loop_ended_first(trace, window, processor, profile.analyst)):
            ended_first.append(f"{name_event(execution)}: the loop ended at {name_event(ended)} (escalate) before "
                               f"{processor}'s turn")
            continue
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
                            f"model.", capped(problems + ended_first))
    if ended_first and len(ended_first) == len(windows):
        return not_applicable(NAME, f"Each of {len(windows)} execution(s) ended the loop before {processor}'s turn "
                                    f"came (an escalation), so none was followed by the processor: "
                                    f"{'; '.join(ended_first[:3])}.")
    judged = len(windows) - len(ended_first)
    aside = (f" {len(ended_first)} more ended the loop before {processor}'s turn (an escalation): not judged."
             if ended_first else "")
    if fed_back:
        aside += (f" {len(fed_back)} execution(s) went back to {profile.code_executor}'s own model, which ran more "
                  f"code before any {processor} run (ADK's code executor): not judged.")
    if not compare:
        whom = (f"the summary is written by {profile.summary_writer}" if key is not None
                else "the profile maps no summary_key")
        return passed(NAME, f"After each of {judged} execution(s) {processor}'s model ran ({whom}, so its "
                            f"answer is not compared with a persisted summary).{aside}", capped(good + ended_first))
    return passed(NAME, f"After each of {judged} execution(s) the processor's model ran and its answer is "
                        f"the persisted summary.{aside}", capped(good + ended_first))
