"""(d) The executor and the summariser run once per fresh delegation, never on stale glue."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..targets.profile import TargetProfile
from ..trace.model import EventRecord, Trace
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
    profile = ctx.profile
    refusal = _cannot_judge(profile)
    if refusal is not None:
        return refusal
    gating = _Gating(ctx.trace, profile)
    for (sid, turn), turn_events in gating.turns():
        gating.judge_turn(sid, turn, turn_events)
    expected = ctx.scenario.expect.executions
    if expected is not None and not gating.no_execution and gating.executions != expected:
        gating.problems.append(f"the scenario expects {expected} execution(s) (expect.executions); the trace has "
                               f"{gating.executions}")
    return _verdict(gating)


def _cannot_judge(profile: TargetProfile) -> CheckResult | None:
    """Why nothing can be paired with this profile (neither side mapped, or one side and no processor), if so."""
    no_delegation, no_execution = delegations_unmapped(profile), executions_unmapped(profile)
    if no_delegation and no_execution:
        return not_applicable(NAME, f"Neither delegations nor executions are mapped: {no_delegation}; "
                                    f"{no_execution}.")
    if (no_delegation or no_execution) and profile.results_processor is None:
        return not_applicable(NAME, f"Pairing executions with delegations needs both mapped, and the profile maps "
                                    f"no results_processor to pair with either: {no_delegation or no_execution}.")
    return None


class _Gating:
    """The trace's evidence, gathered once, and the tallies and problems as its turns are judged in order."""

    def __init__(self, trace: Trace, profile: TargetProfile) -> None:
        self.trace, self.profile = trace, profile
        self.no_delegation, self.no_execution = delegations_unmapped(profile), executions_unmapped(profile)
        # With one side unmapped, only the results processor's runs are judged: against executions, or against
        # delegations standing for them (a delegate tool that runs the code itself).
        self.pair = not (self.no_delegation or self.no_execution)
        self.processor = profile.results_processor
        self.delegate = profile.delegate_tool or f"delegation ({profile.delegation_key!r} write)"
        self.executor = profile.job_builder or "the executor"
        if profile.code_executor is not None:
            self.delegate = f"code block of {profile.code_executor}"
            self.executor = f"{profile.code_executor}'s code executor"
        self.events = appended_events(trace)
        self.run_starts = {run.first.index: run for run in processor_runs(trace, profile)}
        self.processor_has_tools = any(a.tools for a in trace.agents if a.name == self.processor)
        self.turn_sessions = session_of_turn(trace)
        # Without delegation_pattern, a delegation_key write the executor only clears may have been a plain answer
        # (an output_key holds every answer): it is declined, not "never executed" — said in the verdict, never a
        # failure.
        self.may_decline = self.pair and profile.delegation_key is not None and profile.delegation_pattern is None
        # A turn that raised after an execution left it unprocessed: the session's next turn may process it
        # (catch-up).
        self.crashed = {t.turn for t in trace.turns if t.outcome.crash is not None or t.run_error is not None}
        self.carried: dict[str, list[EventRecord]] = {}
        self.problems: list[str] = []
        self.executions = self.delegations = self.runs = self.declined = 0

    def turns(self) -> list[tuple[tuple[str, int], list[EventRecord]]]:
        """The appended events by (session, turn), in the order the turns began."""
        by_turn: dict[tuple[str, int], list[EventRecord]] = defaultdict(list)
        for event in self.events:
            by_turn[(event.session_id, event.turn)].append(event)
        return sorted(by_turn.items(), key=lambda kv: kv[1][0].index)

    def judge_turn(self, sid: str, turn: int, turn_events: list[EventRecord]) -> None:
        """Pair the turn's delegations with executions and executions with processor runs, event by event."""
        state = _Turn(sid, turn, unprocessed=self.carried.pop(sid, []))
        for event in turn_events:
            self._judge_event(event, state)
        if turn in self.crashed and state.unprocessed:
            self.carried[sid] = state.unprocessed
        for delegation in state.pending:
            self.problems.append(f"{name_event(delegation)}: a fresh {self.delegate} that {self.executor} never "
                                 f"executed in turn {turn}")
        self._judge_processor_requests(state)
        self.executions += state.executions
        self.runs += state.runs
        self.delegations += state.delegations

    def _judge_event(self, event: EventRecord, state: _Turn) -> None:
        profile = self.profile
        fresh = delegation_count(event, profile, self.trace.agents, [e for e in self.events if e.index < event.index])
        state.delegations += fresh
        ran_now = fresh if self.no_execution else execution_count(event, profile)
        if self.pair:
            state.pending.extend([event] * fresh)
        if self.may_decline and state.pending and consumes_unrun(event, profile):
            state.pending.pop(0)
            self.declined += 1
        for _ in range(ran_now):  # each execution pairs with its own delegation (code block)
            state.executions += 1
            if self.pair and state.pending:
                state.pending.pop(0)
            elif self.pair:
                ran = (f"{profile.job_builder} ran Job_B" if profile.execution_key is None
                       and profile.code_executor is None else f"an execution ({execution_source(profile)})")
                self.problems.append(f"{name_event(event)}: {ran} without a fresh {self.delegate} before it in turn "
                                     f"{state.turn} (stale trigger)")
            state.unprocessed = [event]
        if event.index in self.run_starts:
            state.runs += 1
            if state.unprocessed:
                state.unprocessed.pop()
            else:
                self.problems.append(
                    f"{name_event(event)}: {self.processor} ran{' again' if state.runs > 1 else ''} without a new "
                    f"execution before it in turn {state.turn} (stale trigger)"
                    f"{_overwrites(self.run_starts[event.index].events, profile.summary_key)}")

    def _judge_processor_requests(self, state: _Turn) -> None:
        """A tool-less processor sends one model request per execution at most."""
        processor = self.processor
        if processor is None or self.processor_has_tools:
            return
        requests = [r for r in self.trace.llm_requests if r.agent == processor and r.turn == state.turn
                    and self.turn_sessions.get(r.turn) == state.sid]
        if len(requests) > state.executions:
            self.problems.append(
                f"turn {state.turn} (session {state.sid}): {processor} sent {len(requests)} model requests "
                f"({', '.join(name_request(r) for r in requests)}) for {state.executions} execution(s)")


@dataclass
class _Turn:
    """One turn's pairing state: delegations not yet executed, executions not yet processed, and counts."""

    sid: str
    turn: int
    unprocessed: list[EventRecord]
    pending: list[EventRecord] = field(default_factory=list)
    executions: int = 0
    runs: int = 0
    delegations: int = 0


def _verdict(gating: _Gating) -> CheckResult:
    profile, processor = gating.profile, gating.processor
    how = f"delegations: {delegation_source(profile)}; executions: {execution_source(profile)}"
    if gating.no_execution:
        how = (f"delegations: {delegation_source(profile)}, each counted as its execution; executions are not "
               f"mapped ({gating.no_execution}), so only the processor's runs are judged against delegations")
    elif gating.no_delegation:
        how = (f"executions: {execution_source(profile)}; delegations are not mapped ({gating.no_delegation}), so "
               f"executions are not paired with delegations")
    if processor is None:
        summary = (f"{gating.delegations} fresh delegation(s), {gating.executions} execution(s) ({how}); the "
                   f"profile maps no results_processor, so only delegation -> execution pairing is judged")
    else:
        summary = (f"{gating.delegations} fresh delegation(s), {gating.executions} execution(s), "
                   f"{gating.runs} {processor} run(s) ({how})")
    if gating.declined:
        summary += (f"; {gating.declined} {profile.delegation_key!r} write(s) {gating.executor} cleared without "
                    f"running, counted as declined (plain answers?): set delegation_pattern in the profile, a regex "
                    f"only code matches, to judge them")
    if gating.problems:
        return failed(NAME, f"Stage gating is broken: {summary}.", capped(gating.problems))
    if processor is None:
        return passed(NAME, f"Each execution followed a fresh delegation: {summary}.")
    return passed(NAME, f"Each execution followed a fresh delegation and was processed at most once: {summary}.")


def _overwrites(run: tuple[EventRecord, ...], summary_key: str | None) -> str:
    """What a run with nothing to process wrote over: the summary, which its output_key or a callback replaces with
    whatever the run said (a skip callback's text is saved under output_key as a model answer would be)."""
    wrote = next((e for e in run if summary_key is not None and summary_key in e.emitted_delta), None)
    return "" if wrote is None else (f"; it wrote {summary_key!r} all the same ({name_event(wrote)}), over the "
                                     f"summary of the last execution")
