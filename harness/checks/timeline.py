"""What several checks derive from a trace: executions, processor runs, request positions, row lookups.

Pure functions of the trace and the target profile. The trace records events
and model requests in separate lists; ``request_positions`` places each request
among the events (a request comes just before the event holding its answer),
which is what "an analyst request after a processor run" needs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from ..targets.profile import TargetProfile
from ..trace.model import (AgentInfo, EventRecord, LlmRequestRecord, LlmResponseRecord, PersistedEventRow,
                           PersistedSnapshot, Trace)


def appended_events(trace: Trace) -> list[EventRecord]:
    """Non-partial events in append order."""
    return sorted((e for e in trace.events if not e.partial), key=lambda e: e.index)


def session_ids(trace: Trace) -> list[str]:
    """Sessions in the order they first appear (turns first, then events, then snapshots)."""
    seen: dict[str, None] = {}
    for sid in [t.session_id for t in trace.turns] + [e.session_id for e in trace.events] + [
            p.session_id for p in trace.persisted]:
        seen.setdefault(sid, None)
    return list(seen)


def session_of_turn(trace: Trace) -> dict[int, str]:
    mapping = {e.turn: e.session_id for e in trace.events}
    mapping.update({t.turn: t.session_id for t in trace.turns})
    return mapping


def agent_names(trace: Trace, profile: TargetProfile) -> set[str]:
    """Names of the target's agents: those the trace lists plus the profile's roles (unmapped roles left out)."""
    roles = (profile.loop_agent, profile.analyst, profile.job_builder, profile.results_processor,
             profile.summary_author)
    return {a.name for a in trace.agents} | {role for role in roles if role is not None}


def unmapped_all(profile: TargetProfile, *fields: str) -> str | None:
    """Why a check cannot apply when it needs any one of ``fields``: None if at least one is mapped."""
    reasons = [profile.unmapped(name) for name in fields]
    if not all(reasons):
        return None
    if len(fields) == 1:
        return reasons[0]
    described = "; ".join(f"{name}: {TargetProfile.model_fields[name].description}" for name in fields)
    return (f"the target profile maps none of {', '.join(fields)} ({described}); set one of them in the profile "
            f"to check this")


def executions_unmapped(profile: TargetProfile) -> str | None:
    """Why executions cannot be found: neither execution_key nor the executor (job_builder) is mapped."""
    return unmapped_all(profile, "execution_key", "job_builder", "code_executor")


def delegations_unmapped(profile: TargetProfile) -> str | None:
    return unmapped_all(profile, "delegate_tool", "delegation_key", "code_executor")


def execution_source(profile: TargetProfile) -> str:
    """How executions are told apart, in the profile's words (for explanations)."""
    if profile.code_executor is not None:
        return f"a code_execution_result part in an event of {profile.code_executor} (its ADK code_executor)"
    if profile.execution_key is not None:
        return f"an event writing {profile.execution_key!r}"
    if profile.job_builder is not None:
        return f"a {profile.job_builder} event with a state delta"
    return "nothing (the profile maps no execution_key and no executor)"


def delegation_source(profile: TargetProfile) -> str:
    """How delegations are told apart, in the profile's words (for explanations)."""
    if profile.code_executor is not None:
        return (f"an executable_code part (or code in its executor's code_block_delimiters) in an "
                f"event of {profile.code_executor}")
    if profile.delegate_tool is not None:
        return f"a {profile.delegate_tool} response that wrote state"
    if profile.delegation_key is not None:
        return f"an event writing {profile.delegation_key!r}"
    return "nothing (the profile maps no delegate_tool and no delegation_key)"


def is_execution(event: EventRecord, profile: TargetProfile) -> bool:
    """An event holding an execution of delegated code (see ``execution_count``).

    With ``code_executor``: an event of that agent with a code_execution_result part. With ``execution_key``: an event (of any author) whose delta writes that key. Otherwise an event of the
    executor (``job_builder``) that carries a state delta (a gated no-op carries none) other than only clearing
    ``delegation_key`` (an executor consuming a plain answer without running it). Neither mapped: none.
    """
    return execution_count(event, profile) > 0


def execution_count(event: EventRecord, profile: TargetProfile) -> int:
    """Executions in an event: its code_execution_result parts with ``code_executor`` (a model-side executor's
    answer may hold several), else one for an execution event (``is_execution``'s rules)."""
    if event.partial:
        return 0
    if profile.code_executor is not None:
        return sum(p.kind == "code_execution_result" for p in event.code_parts) \
            if event.author == profile.code_executor else 0
    return int(_is_state_execution(event, profile))


def _is_state_execution(event: EventRecord, profile: TargetProfile) -> bool:
    if profile.execution_key is not None:
        return profile.execution_key in event.emitted_delta
    if profile.job_builder is not None:
        return event.author == profile.job_builder and bool(event.emitted_delta) and not consumes_unrun(event, profile)
    return False


def consumes_unrun(event: EventRecord, profile: TargetProfile) -> bool:
    """An event of the executor whose delta only clears ``delegation_key``: it took the analyst's answer without
    running it (a plain answer an output_key holds, or code an executor dropped)."""
    delta = event.emitted_delta
    return (profile.code_executor is None and profile.job_builder is not None and event.author == profile.job_builder and not event.partial
            and profile.delegation_key is not None and set(delta) == {profile.delegation_key}
            and not profile.hands_over_code(delta[profile.delegation_key]))


def executions(trace: Trace, profile: TargetProfile) -> list[EventRecord]:
    """Execution events in order, an event listed once per execution it holds (``execution_count``)."""
    return [e for e in appended_events(trace) for _ in range(execution_count(e, profile))]


def is_model_answer(event: EventRecord) -> bool:
    """An event holding a model's answer (text or function calls), not a tool's response."""
    return not event.partial and bool(event.text.strip() or event.function_calls) and not event.function_responses


@dataclass(frozen=True)
class ProcessorRun:
    """Consecutive results_processor events of one invocation, at least one with text or a call: one run.

    A group holding only state deltas (a plugin's after_agent write while the agent
    itself was gated) is not a run — unless the processor digests in code (``processor_in_code``).
    """

    events: tuple[EventRecord, ...]

    @property
    def first(self) -> EventRecord:
        return self.events[0]

    @property
    def last(self) -> EventRecord:
        return self.events[-1]


def processor_runs(trace: Trace, profile: TargetProfile) -> list[ProcessorRun]:
    if profile.results_processor is None:
        return []
    groups: list[ProcessorRun] = []
    for sid in session_ids(trace):
        current: list[EventRecord] = []
        for event in (e for e in appended_events(trace) if e.session_id == sid):
            mine = event.author == profile.results_processor
            if current and (not mine or current[-1].invocation_id != event.invocation_id):
                groups.append(ProcessorRun(tuple(current)))
                current = []
            if mine:
                current.append(event)
        if current:
            groups.append(ProcessorRun(tuple(current)))
    in_code = processor_in_code(trace, profile)  # no model: its state writes are its run
    substantive = [g for g in groups if any(e.text.strip() or e.function_calls or (in_code and e.emitted_delta)
                                            for e in g.events)]
    return sorted(substantive, key=lambda r: r.first.index)


def processor_in_code(trace: Trace, profile: TargetProfile) -> bool:
    """The results processor is no LlmAgent (a BaseAgent digesting results in code): it sends no model request,
    and an event of it with a state delta is its run."""
    info = next((a for a in trace.agents if a.name == profile.results_processor), None)
    return info is not None and info.llm_agent is False


@dataclass(frozen=True)
class ExecutionWindow:
    """One execution and what followed it, up to the next execution of the same session."""

    execution: EventRecord
    ordinal: int
    next_execution: EventRecord | None
    runs: tuple[ProcessorRun, ...]
    block: int = 0  # which of its event's executions (a model-side executor's answer may hold several)

    def fed_back(self, profile: TargetProfile) -> bool:
        """ADK's code executor handed this result back to its agent's model, which went on to run more code in
        the same run before any processor ran: the agent's model read it, not the processor."""
        following = self.next_execution
        return (profile.code_executor is not None and not self.runs and following is not None
                and following.author == self.execution.author
                and following.invocation_id == self.execution.invocation_id)

    def contains(self, position: float) -> bool:
        end = self.next_execution.index if self.next_execution else math.inf
        return self.execution.index < position < end


def execution_windows(trace: Trace, profile: TargetProfile) -> list[ExecutionWindow]:
    """Each execution with the processor runs of its invocation that came after it and before the next one."""
    runs = processor_runs(trace, profile)
    windows: list[ExecutionWindow] = []
    for sid in session_ids(trace):
        session_executions = [e for e in executions(trace, profile) if e.session_id == sid]
        for ordinal, execution in enumerate(session_executions, start=1):
            # The next execution *event*: executions of one event (a model-side executor's answer) share what follows.
            following = next((e for e in session_executions[ordinal:] if e is not execution), None)
            end = following.index if following else math.inf
            mine = tuple(r for r in runs if r.first.session_id == sid
                         and r.first.invocation_id == execution.invocation_id and execution.index < r.first.index < end)
            block = sum(e is execution for e in session_executions[:ordinal - 1])
            windows.append(ExecutionWindow(execution, ordinal, following, mine, block))
    return sorted(windows, key=lambda w: w.execution.index)


def execution_code(window: ExecutionWindow, trace: Trace) -> tuple[str, str]:
    """(code, output) of the code block behind ``window`` (ADK's code executors): its code_execution_result part's
    output, and the executable_code part it ran — in the same event (model-side executor) or, for a local
    executor, the last one of the same agent's earlier event in the invocation. Empty strings where none."""
    event = window.execution
    results = [p for p in event.code_parts if p.kind == "code_execution_result"]
    codes = [p for p in event.code_parts if p.kind == "executable_code"]
    output = results[window.block].output if window.block < len(results) else ""
    if window.block < len(codes):
        return codes[window.block].code, output
    earlier = [p for e in appended_events(trace) if e.index < event.index and e.author == event.author
               and e.invocation_id == event.invocation_id for p in e.code_parts if p.kind == "executable_code"]
    return (earlier[-1].code if earlier else ""), output


def request_positions(trace: Trace) -> dict[int, float]:
    """Request index -> where it falls among the events (a fractional event index).

    Traces from the runner carry one clock for events and requests (``seq``): a request
    sits just before the first event recorded after it. Hand-built traces without it
    fall back to pairing: the k-th request of an agent in an invocation is answered by the k-th model-answer
    event of that agent in that invocation, so it sits just before that event. A request
    without an answer event (the model failed) sits after the invocation's last event.
    """
    events = appended_events(trace)
    if trace.llm_requests and all(r.seq >= 0 for r in trace.llm_requests) and all(e.seq >= 0 for e in events):
        by_seq = sorted(events, key=lambda e: e.seq)
        positions_by_clock: dict[int, float] = {}
        for request in trace.llm_requests:
            later = next((e for e in by_seq if e.seq > request.seq), None)
            positions_by_clock[request.index] = later.index - 0.5 if later is not None else math.inf
        return positions_by_clock
    answers: dict[tuple[str, str], list[EventRecord]] = defaultdict(list)
    last_of_invocation: dict[str, int] = {}
    for event in appended_events(trace):
        last_of_invocation[event.invocation_id] = event.index
        if is_model_answer(event):
            answers[(event.invocation_id, event.author)].append(event)
    requests: dict[tuple[str, str], list[LlmRequestRecord]] = defaultdict(list)
    for request in sorted(trace.llm_requests, key=lambda r: r.index):
        requests[(request.invocation_id, request.agent)].append(request)
    positions: dict[int, float] = {}
    for key, group in requests.items():
        answered_by = answers.get(key, [])
        for k, request in enumerate(group):
            if k < len(answered_by):
                positions[request.index] = answered_by[k].index - 0.5
            else:
                last = last_of_invocation.get(request.invocation_id)
                positions[request.index] = last + 0.5 if last is not None else math.inf
    return positions


def session_of_request(trace: Trace, request: LlmRequestRecord) -> str | None:
    by_invocation = {e.invocation_id: e.session_id for e in trace.events}
    return by_invocation.get(request.invocation_id) or session_of_turn(trace).get(request.turn)


def response_to(trace: Trace, request: LlmRequestRecord) -> LlmResponseRecord | None:
    """The response record answering ``request``, paired in order among the agent's records.

    Responses carry their own counter, not the request's index, and a request whose
    model call failed has no response. When the agent has fewer responses than
    requests, only the requests answered by an event take part in the pairing.
    """
    requests = sorted((r for r in trace.llm_requests if r.agent == request.agent), key=lambda r: r.index)
    responses = sorted((r for r in trace.llm_responses if r.agent == request.agent), key=lambda r: r.index)
    if len(responses) < len(requests):
        answered = _answered_requests(trace)
        requests = [r for r in requests if r.index in answered]
    k = next((i for i, r in enumerate(requests) if r.index == request.index), None)
    return responses[k] if k is not None and k < len(responses) else None


def _answered_requests(trace: Trace) -> set[int]:
    """Indexes of requests whose answer became an event (see ``request_positions``)."""
    answers: dict[tuple[str, str], int] = defaultdict(int)
    for event in appended_events(trace):
        if is_model_answer(event):
            answers[(event.invocation_id, event.author)] += 1
    answered: set[int] = set()
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for request in sorted(trace.llm_requests, key=lambda r: r.index):
        key = (request.invocation_id, request.agent)
        if seen[key] < answers[key]:
            answered.add(request.index)
        seen[key] += 1
    return answered


def rows_by_event(trace: Trace) -> dict[int, tuple[PersistedSnapshot, PersistedEventRow]]:
    """Event index -> its row in the last persisted snapshot of its session.

    Rows and events are paired per (invocation, author) in order, so an event the
    service failed to persist leaves its own slot empty without shifting the others.
    """
    found: dict[int, tuple[PersistedSnapshot, PersistedEventRow]] = {}
    for sid in session_ids(trace):
        snapshot = trace.final_persisted(sid)
        if snapshot is None:
            continue
        rows: dict[tuple[str, str], list[PersistedEventRow]] = defaultdict(list)
        for row in sorted(snapshot.events, key=lambda r: r.seq):
            rows[(row.invocation_id, row.author)].append(row)
        events: dict[tuple[str, str], list[EventRecord]] = defaultdict(list)
        for event in appended_events(trace):
            if event.session_id == sid:
                events[(event.invocation_id, event.author)].append(event)
        for key, group in events.items():
            for event, row in zip(group, rows.get(key, [])):
                found[event.index] = (snapshot, row)
    return found


def unique_rows(trace: Trace) -> list[tuple[PersistedSnapshot, PersistedEventRow]]:
    """Every persisted row once (snapshots repeat earlier rows), with the first snapshot that held it."""
    seen: set[tuple[str, int]] = set()
    result: list[tuple[PersistedSnapshot, PersistedEventRow]] = []
    for snapshot in trace.persisted:
        for row in snapshot.events:
            if (snapshot.session_id, row.seq) not in seen:
                seen.add((snapshot.session_id, row.seq))
                result.append((snapshot, row))
    return result


def last_snapshot_of_turn(trace: Trace, session_id: str, turn: int) -> PersistedSnapshot | None:
    matches = [p for p in trace.persisted if p.session_id == session_id and p.turn == turn]
    return matches[-1] if matches else None


def code_blocks(text: str, delimiters: list[tuple[str, str]]) -> list[str]:
    """The code blocks of ``text`` in any of ``delimiters`` (an ADK code executor's code_block_delimiters), in order
    of appearance, as ADK's executor finds them (its earliest opening delimiter, then the closing one)."""
    blocks: list[str] = []
    position = 0
    while True:
        found = [(start, lead, trail) for lead, trail in delimiters if (start := text.find(lead, position)) >= 0
                 and text.find(trail, start + len(lead)) >= 0]
        if not found:
            return blocks
        start, lead, trail = min(found)
        end = text.find(trail, start + len(lead))
        if text[start + len(lead):end]:
            blocks.append(text[start + len(lead):end])
        position = end + len(trail)


def code_executor_agent(agents: list[AgentInfo], profile: TargetProfile) -> AgentInfo | None:
    """The trace's record of the profile's ``code_executor`` agent (its executor's class and delimiters)."""
    return next((a for a in agents if profile.code_executor is not None and a.name == profile.code_executor), None)


def code_delegations(event: EventRecord, profile: TargetProfile, agents: list[AgentInfo],
                     earlier: list[EventRecord] | None = None) -> int:
    """Code the ``code_executor`` agent handed to its executor in ``event``: its executable_code parts, else (a
    local executor that did not take it) code blocks in its text — unless ADK itself left it unrun: the agent's
    last ``error_retry_attempts`` results in the invocation (``earlier``: the events before) all failed."""
    if event.author != profile.code_executor:
        return 0
    parts = sum(p.kind == "executable_code" for p in event.code_parts)
    if parts or any(p.kind == "code_execution_result" for p in event.code_parts):
        return parts
    agent = code_executor_agent(agents, profile)
    if agent is None or agent.model_side_execution or not agent.code_block_delimiters:
        return 0
    blocks = len(code_blocks(event.text, agent.code_block_delimiters))
    limit = agent.code_error_retry_attempts
    if blocks and limit is not None and earlier is not None:
        outcomes = [p.outcome for e in earlier if e.author == event.author and e.invocation_id == event.invocation_id
                    for p in e.code_parts if p.kind == "code_execution_result"]
        if limit <= 0 or (len(outcomes) >= limit and all(o == "OUTCOME_FAILED" for o in outcomes[-limit:])):
            return 0  # ADK's retry limit, not the agent's: its executor runs no more code in this invocation
    return blocks


def delegation_count(event: EventRecord, profile: TargetProfile, agents: list[AgentInfo] | None = None,
                     earlier: list[EventRecord] | None = None) -> int:
    """Fresh delegations in an event.

    With ``code_executor``: its executable_code parts (``code_delegations``; ``agents``, the trace's, give the
    executor's delimiters for code left in the text).
    With ``delegate_tool``: its responses in an event that wrote state (opened a stage), in the analyst's events
    when the analyst is mapped (any author's otherwise). With ``delegation_key``: one when the event's delta
    writes that key a value that hands code over (``TargetProfile.hands_over_code``: not blank, and matching
    ``delegation_pattern`` when set — an output_key holds plain answers too), in the analyst's events when it is
    mapped: the executor clearing it (None, "") after running the code is cleanup, not a new delegation.
    Neither mapped: none.
    """
    if event.partial:
        return 0
    if profile.code_executor is not None:
        return code_delegations(event, profile, agents or [], earlier)
    if not event.emitted_delta:
        return 0
    if profile.delegate_tool is not None:
        if profile.analyst is not None and event.author != profile.analyst:
            return 0
        return event.function_responses.count(profile.delegate_tool)
    if profile.delegation_key is not None:
        if profile.analyst is not None and event.author != profile.analyst:
            return 0
        if profile.delegation_key not in event.emitted_delta:
            return 0
        return int(profile.hands_over_code(event.emitted_delta[profile.delegation_key]))
    return 0


def summary_writes(trace: Trace, profile: TargetProfile) -> list[EventRecord]:
    """Events of the summary writer (summary_author, else results_processor) whose delta holds summary_key."""
    writer, key = profile.summary_writer, profile.summary_key
    if writer is None or key is None:
        return []
    return [e for e in appended_events(trace) if e.author == writer and key in e.emitted_delta]


def window_summaries(window: ExecutionWindow, trace: Trace, profile: TargetProfile) -> list[EventRecord]:
    """The summary writes of ``window``: from its execution event (included) up to the next execution."""
    end = window.next_execution.index if window.next_execution else math.inf
    return [e for e in summary_writes(trace, profile) if e.session_id == window.execution.session_id
            and window.execution.index <= e.index < end]


def state_value(snapshot: PersistedSnapshot, key: str) -> tuple[bool, object]:
    """(held, value) of ``key`` in a snapshot: user:/app: keys live in their own rows, without the prefix."""
    for prefix, state in (("user:", snapshot.user_state), ("app:", snapshot.app_state)):
        if key.startswith(prefix):
            name = key[len(prefix):]
            return name in state, state.get(name)
    return key in snapshot.session_state, snapshot.session_state.get(key)
