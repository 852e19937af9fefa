"""(d) Job_B and results_processor run once per fresh delegation, never on stale glue."""

from __future__ import annotations

from collections import defaultdict

from ..trace.model import EventRecord
from .base import CheckContext, CheckResult, check, failed, passed
from .evidence import capped, name_event, name_request
from .timeline import appended_events, delegation_count, is_execution, processor_runs, session_of_turn

NAME = "stage_gating"


@check(
    NAME,
    title="Stage gating: no re-run without a fresh delegation",
    why="Without stage/token gating, stale temp: glue from an earlier LoopAgent iteration makes job_builder "
        "re-run Job_B and results_processor re-summarise in later iterations. Each turn must have exactly one "
        "execution per fresh delegate call, and at most one processor run per execution.",
    dod_item="000: repeated LoopAgent iterations do not re-run job_builder / results_processor without a fresh "
             "delegate_code_results",
)
def stage_gating(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    events = appended_events(trace)
    by_turn: dict[tuple[str, int], list[EventRecord]] = defaultdict(list)
    for event in events:
        by_turn[(event.session_id, event.turn)].append(event)
    run_starts = {run.first.index for run in processor_runs(trace, profile)}
    processor_has_tools = any(a.tools for a in trace.agents if a.name == profile.results_processor)
    turn_sessions = session_of_turn(trace)

    problems: list[str] = []
    total_executions = total_delegations = total_runs = 0
    for (sid, turn), turn_events in sorted(by_turn.items(), key=lambda kv: kv[1][0].index):
        pending: list[EventRecord] = []  # delegation events not yet executed
        unprocessed: list[EventRecord] = []  # executions not yet processed
        executions = runs = 0
        for event in turn_events:
            for _ in range(delegation_count(event, profile)):
                pending.append(event)
            if is_execution(event, profile):
                executions += 1
                if pending:
                    pending.pop(0)
                else:
                    problems.append(f"{name_event(event)}: job_builder ran Job_B without a fresh "
                                    f"{profile.delegate_tool} before it in turn {turn} (stale trigger)")
                unprocessed = [event]
            if event.index in run_starts:
                runs += 1
                if unprocessed:
                    unprocessed.pop()
                else:
                    problems.append(f"{name_event(event)}: {profile.results_processor} ran again without a new "
                                    f"execution before it in turn {turn} (stale trigger)")
        for delegation in pending:
            problems.append(f"{name_event(delegation)}: a fresh {profile.delegate_tool} that job_builder never "
                            f"executed in turn {turn}")
        if not processor_has_tools:
            requests = [r for r in trace.llm_requests if r.agent == profile.results_processor and r.turn == turn
                        and turn_sessions.get(r.turn) == sid]
            if len(requests) > executions:
                problems.append(
                    f"turn {turn} (session {sid}): {profile.results_processor} sent {len(requests)} model requests "
                    f"({', '.join(name_request(r) for r in requests)}) for {executions} execution(s)")
        total_executions += executions
        total_runs += runs
        total_delegations += sum(delegation_count(e, profile) for e in turn_events)

    expected = ctx.scenario.expect.executions
    if expected is not None and total_executions != expected:
        problems.append(f"the scenario expects {expected} execution(s) (expect.executions); the trace has "
                        f"{total_executions}")
    summary = (f"{total_delegations} fresh delegation(s), {total_executions} execution(s), "
               f"{total_runs} results_processor run(s)")
    if problems:
        return failed(NAME, f"Stage gating is broken: {summary}.", capped(problems))
    return passed(NAME, f"Each execution followed a fresh delegation and was processed at most once: {summary}.")
