"""The recovery run of a crash point: which turns a fresh process sends, and what is left of the model script.

* ``retry``: the client sends the crashed turn's message again, then the turns after it;
* ``next_turn``: the user's next turn (``CONTINUE_MESSAGE`` when the crashed turn was the session's last);
* ``resume``: ADK resumes the crashed turn's invocation (its id from the journal's acknowledged events of that turn;
  resume.py), then the turns after it as ``retry`` sends them. When no event of the turn was acknowledged the client
  never learnt an invocation id and the store holds nothing of it: the message is sent again, as ``retry``.

The model continues where the crash left it: a step the journal says was served is not served again, unless it
was an agent's answer whose event the store never acknowledged (the answer died with the process: a deployment
asks the model again, and the script's answer stands for that new answer). Faults and sub-LM steps stay consumed.
Under ``resume`` ADK decides what is asked again (``answered``): an acknowledged call whose tool never answered is
not (the resumed invocation runs it), an agent's acknowledged text is when the agent's own ``end_of_agent`` event
was not acknowledged after it (ADK runs that agent's step again).
Sessions are addressed by their ids (the recovery's scenario name differs, so the run's seeded ids differ from the
crashed run's and do not collide with what it stored).
"""

from __future__ import annotations

from ..scenario.models import Scenario, SessionSpec, Turn
from ..scenario.script import SUB_LM, FaultStep
from ..trace.model import EventRecord
from .journal import Journal
from .resume import Resume

CONTINUE_MESSAGE = "continue"
RECOVERIES = ("retry", "next_turn", "resume")


class RecoveryNotRun(Exception):
    """A recovery this harness cannot run for this point (the reason is the message)."""


def turn_position(scenario: Scenario, turn: int) -> tuple[int, int]:
    """(session index, turn position in it) of the run's ``turn``-th turn (counted over all sessions)."""
    count = 0
    for index, spec in enumerate(scenario.sessions):
        if turn < count + len(spec.turns):
            return index, turn - count
        count += len(spec.turns)
    raise LookupError(f"scenario {scenario.name!r} has {count} turns, no turn {turn}")


def _code_ran(records: list[EventRecord]) -> bool:
    return any(part.kind == "code_execution_result" for r in records for part in r.code_parts)


def answered(records: list[EventRecord], agent: str, *, resumed: str | None = None) -> int:
    """The agent's answers the store acknowledged whole: a text, calls whose responses were acknowledged too, code
    (ADK's code executors) whose result was (a call whose tool never answered, code that never ran, died with the
    process: the model is asked again).

    When ADK resumes invocation ``resumed``, it runs an acknowledged call whose tool never answered itself (the
    answer stands), and asks again an agent whose last event in the invocation is its text, when no later event
    of its own (its ``end_of_agent``) was acknowledged: that agent never ended, so it runs its step again."""
    count = 0
    for position, r in enumerate(records):
        code = any(part.kind == "executable_code" for part in r.code_parts)
        if r.author != agent or r.function_responses or not (r.function_calls or r.text or code):
            continue
        later = records[position + 1:]
        if resumed is not None and r.invocation_id == resumed:
            ended = any(e.author == agent and e.invocation_id == resumed for e in later)
            count += bool(r.function_calls) or ended
            continue
        responded = {n for e in later for n in e.function_responses}
        count += set(r.function_calls) <= responded and (not code or _code_ran([r, *later]))
    return count


def remaining_script(scenario: Scenario, journal: Journal, *, resumed: str | None = None) -> dict[str, list]:
    """What the script still serves: ``resumed`` is the invocation ADK resumes (recovery ``resume``), if any."""
    left = {}
    for agent, steps in scenario.script.items():
        served = journal.served.get(agent, [])
        acked = len(served) if agent == SUB_LM else answered(journal.records, agent, resumed=resumed)
        consumed, answers = set(), 0
        for index in served:
            if isinstance(steps[index], FaultStep):
                consumed.add(index)
            elif answers < acked:
                consumed.add(index)
                answers += 1
        left[agent] = [step for index, step in enumerate(steps) if index not in consumed]
    return left


def resumed_invocation(scenario: Scenario, *, crashed_turn: int, journal: Journal) -> Resume | None:
    """The crashed turn's invocation, as the client saw it in the acknowledged events (None: it saw none)."""
    session_index, _ = turn_position(scenario, crashed_turn)
    seen = [r for r in journal.records if r.turn == crashed_turn and r.invocation_id]
    if not seen:
        return None
    spec = scenario.sessions[session_index]
    return Resume(user_id=spec.user, session_id=scenario.session_id(session_index),
                  invocation_id=seen[-1].invocation_id)


def recovery_scenario(scenario: Scenario, *, crashed_turn: int, journal: Journal, recovery: str) -> Scenario:
    """The scenario the recovering process runs: ``resume`` sends the turns ``retry`` sends (the first of them the
    crashed turn, run as the resume of its invocation when there is one: ``resumed_invocation``)."""
    if recovery not in RECOVERIES:
        raise RecoveryNotRun(f"unknown recovery {recovery!r}: one of {', '.join(RECOVERIES)}")
    session_index, position = turn_position(scenario, crashed_turn)
    crashed = scenario.sessions[session_index]
    turns = list(crashed.turns[position + 1:] if recovery == "next_turn" else crashed.turns[position:])
    sessions = [crashed.model_copy(update={"turns": turns or [Turn(user=CONTINUE_MESSAGE)],
                                           "id": scenario.session_id(session_index)})]
    sessions += [spec.model_copy(update={"id": scenario.session_id(i)})
                 for i, spec in enumerate(scenario.sessions) if i > session_index]
    resume = resumed_invocation(scenario, crashed_turn=crashed_turn, journal=journal) if recovery == "resume" else None
    expect = scenario.expect.model_copy(update={"executions": None})  # counted across processes: effects_exactly_once
    script = remaining_script(scenario, journal, resumed=resume.invocation_id if resume else None)
    return scenario.model_copy(update={"name": f"{scenario.name}_recovery", "sessions": sessions, "script": script,
                                       "expect": expect})


def sessions_touched(scenario: Scenario, crashed_turn: int) -> list[tuple[str, str]]:
    """(user, session id) of every session up to the crashed one: what the store must still show."""
    session_index, _ = turn_position(scenario, crashed_turn)
    return [(spec.user, scenario.session_id(i)) for i, spec in enumerate(scenario.sessions[:session_index + 1])]


def crashed_session(scenario: Scenario, crashed_turn: int) -> SessionSpec:
    return scenario.sessions[turn_position(scenario, crashed_turn)[0]]
