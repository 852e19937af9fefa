"""(d) The executor and the summariser run once per fresh delegation, never on stale glue."""

from __future__ import annotations

from collections import defaultdict

from ..trace.model import EventRecord
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event, name_request
from .timeline import (appended_events, consumes_unrun, delegation_count, delegation_source, delegations_unmapped,
                       execution_count, execution_source, executions_unmapped, processor_runs, session_of_turn)

NAME = "stage_gating"


@check(
    NAME,
    title="Stage gating: no re-run without a fresh delegation",
    why="Without stage/token gating, stale temp: glue from an earlier LoopAgent iteration makes the executor "
        "re-run the code and the results processor re-summarise in later iterations. Each turn must have exactly "
        "one execution per fresh delegation (profile: delegate_tool or delegation_key; executor or execution_key), "
        "and at most one processor run per execution (when the profile maps a results_processor).",
    dod_item="000: repeated LoopAgent iterations do not re-run job_builder / results_processor without a fresh "
             "delegate_code_results",
)
def stage_gating(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    no_delegation, no_execution = delegations_unmapped(profile), executions_unmapped(profile)
    if no_delegation and no_execution:
        return not_applicable(NAME, f"Neither delegations nor executions are mapped: {no_delegation}; "
                                    f"{no_execution}.")
    if (no_delegation or no_execution) and profile.results_processor is None:
        return not_applicable(NAME, f"Pairing executions with delegations needs both mapped, and the profile maps "
                                    f"no results_processor to pair with either: {no_delegation or no_execution}.")
    # With one side unmapped, only the results processor's runs are judged: against executions, or against
    # delegations standing for them (a delegate tool that runs the code itself).
    pair = not (no_delegation or no_execution)
    processor = profile.results_processor
    delegate = profile.delegate_tool or f"delegation ({profile.delegation_key!r} write)"
    executor = profile.job_builder or "the executor"
    if profile.code_executor is not None:
        delegate, executor = f"code block of {profile.code_executor}", f"{profile.code_executor}'s code executor"
    events = appended_events(trace)
    by_turn: dict[tuple[str, int], list[EventRecord]] = defaultdict(list)
    for event in events:
        by_turn[(event.session_id, event.turn)].append(event)
    run_starts = {run.first.index: run for run in processor_runs(trace, profile)}
    processor_has_tools = any(a.tools for a in trace.agents if a.name == processor)
    turn_sessions = session_of_turn(trace)

    # Without delegation_pattern, a delegation_key write the executor only clears may have been a plain answer (an
    # output_key holds every answer): it is declined, not "never executed" — said in the verdict, never a failure.
    may_decline = pair and profile.delegation_key is not None and profile.delegation_pattern is None
    problems: list[str] = []
    total_executions = total_delegations = total_runs = declined = 0
    # A turn that raised after an execution left it unprocessed: the session's next turn may process it (catch-up).
    crashed = {t.turn for t in trace.turns if t.outcome.crash is not None or t.run_error is not None}
    carried: dict[str, list[EventRecord]] = {}
    for (sid, turn), turn_events in sorted(by_turn.items(), key=lambda kv: kv[1][0].index):
        pending: list[EventRecord] = []  # delegation events not yet executed
        unprocessed: list[EventRecord] = carried.pop(sid, [])  # executions not yet processed
        executions = runs = 0
        for event in turn_events:
            fresh = delegation_count(event, profile, trace.agents, [e for e in events if e.index < event.index])
            ran_now = fresh if no_execution else execution_count(event, profile)
            if pair:
                pending.extend([event] * fresh)
            if may_decline and pending and consumes_unrun(event, profile):
                pending.pop(0)
                declined += 1
            for _ in range(ran_now):  # each execution pairs with its own delegation (code block)
                executions += 1
                if pair and pending:
                    pending.pop(0)
                elif pair:
                    ran = (f"{profile.job_builder} ran Job_B" if profile.execution_key is None
                           and profile.code_executor is None else f"an execution ({execution_source(profile)})")
                    problems.append(f"{name_event(event)}: {ran} without a fresh {delegate} before it in turn {turn} "
                                    f"(stale trigger)")
                unprocessed = [event]
            if event.index in run_starts:
                runs += 1
                if unprocessed:
                    unprocessed.pop()
                else:
                    problems.append(f"{name_event(event)}: {processor} ran{' again' if runs > 1 else ''} without a "
                                    f"new execution before it in turn {turn} (stale trigger)"
                                    f"{_overwrites(run_starts[event.index].events, profile.summary_key)}")
        if turn in crashed and unprocessed:
            carried[sid] = unprocessed
        for delegation in pending:
            problems.append(f"{name_event(delegation)}: a fresh {delegate} that {executor} never "
                            f"executed in turn {turn}")
        if processor is not None and not processor_has_tools:
            requests = [r for r in trace.llm_requests if r.agent == processor and r.turn == turn
                        and turn_sessions.get(r.turn) == sid]
            if len(requests) > executions:
                problems.append(
                    f"turn {turn} (session {sid}): {processor} sent {len(requests)} model requests "
                    f"({', '.join(name_request(r) for r in requests)}) for {executions} execution(s)")
        total_executions += executions
        total_runs += runs
        total_delegations += sum(delegation_count(e, profile, trace.agents, [x for x in events if x.index < e.index])
                                 for e in turn_events)

    expected = ctx.scenario.expect.executions
    if expected is not None and not no_execution and total_executions != expected:
        problems.append(f"the scenario expects {expected} execution(s) (expect.executions); the trace has "
                        f"{total_executions}")
    how = f"delegations: {delegation_source(profile)}; executions: {execution_source(profile)}"
    if no_execution:
        how = (f"delegations: {delegation_source(profile)}, each counted as its execution; executions are not "
               f"mapped ({no_execution}), so only the processor's runs are judged against delegations")
    elif no_delegation:
        how = (f"executions: {execution_source(profile)}; delegations are not mapped ({no_delegation}), so "
               f"executions are not paired with delegations")
    if processor is None:
        summary = (f"{total_delegations} fresh delegation(s), {total_executions} execution(s) ({how}); the profile "
                   f"maps no results_processor, so only delegation -> execution pairing is judged")
    else:
        summary = (f"{total_delegations} fresh delegation(s), {total_executions} execution(s), "
                   f"{total_runs} {processor} run(s) ({how})")
    if declined:
        summary += (f"; {declined} {profile.delegation_key!r} write(s) {executor} cleared without running, counted "
                    f"as declined (plain answers?): set delegation_pattern in the profile, a regex only code "
                    f"matches, to judge them")
    if problems:
        return failed(NAME, f"Stage gating is broken: {summary}.", capped(problems))
    if processor is None:
        return passed(NAME, f"Each execution followed a fresh delegation: {summary}.")
    return passed(NAME, f"Each execution followed a fresh delegation and was processed at most once: {summary}.")


def _overwrites(run: tuple[EventRecord, ...], summary_key: str | None) -> str:
    """What a run with nothing to process wrote over: the summary, which its output_key or a callback replaces with
    whatever the run said (a skip callback's text is saved under output_key as a model answer would be)."""
    wrote = next((e for e in run if summary_key is not None and summary_key in e.emitted_delta), None)
    return "" if wrote is None else (f"; it wrote {summary_key!r} all the same ({name_event(wrote)}), over the "
                                     f"summary of the last execution")
