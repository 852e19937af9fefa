"""The recovery run of a crash point: which turns a fresh process sends, and what is left of the model script.

* ``retry``: the client sends the crashed turn's message again, then the turns after it;
* ``next_turn``: the user's next turn (``CONTINUE_MESSAGE`` when the crashed turn was the session's last);
* ``resume`` (ADK resuming the interrupted invocation) is not run: the point is n/a, saying so.

The model continues where the crash left it: a step the journal says was served is not served again, unless it
was an agent's answer whose event the store never acknowledged (the answer died with the process: a deployment
asks the model again, and the script's answer stands for that new answer). Faults and sub-LM steps stay consumed.
Sessions are addressed by their ids (the recovery's scenario name differs, so the run's seeded ids differ from the
crashed run's and do not collide with what it stored).
"""

from __future__ import annotations

from ..scenario.models import Scenario, SessionSpec, Turn
from ..scenario.script import SUB_LM, FaultStep
from ..trace.model import EventRecord
from .journal import Journal

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


def answered(records: list[EventRecord], agent: str) -> int:
    """The agent's answers the store acknowledged whole: a text, calls whose responses were acknowledged too, code
    (ADK's code executors) whose result was (a call whose tool never answered, code that never ran, died with the
    process: the model is asked again)."""
    count = 0
    for position, r in enumerate(records):
        code = any(part.kind == "executable_code" for part in r.code_parts)
        if r.author != agent or r.function_responses or not (r.function_calls or r.text or code):
            continue
        later = records[position + 1:]
        answered = {n for e in later for n in e.function_responses}
        count += set(r.function_calls) <= answered and (not code or _code_ran([r, *later]))
    return count


def remaining_script(scenario: Scenario, journal: Journal) -> dict[str, list]:
    left = {}
    for agent, steps in scenario.script.items():
        served = journal.served.get(agent, [])
        acked = len(served) if agent == SUB_LM else answered(journal.records, agent)
        consumed, answers = set(), 0
        for index in served:
            if isinstance(steps[index], FaultStep):
                consumed.add(index)
            elif answers < acked:
                consumed.add(index)
                answers += 1
        left[agent] = [step for index, step in enumerate(steps) if index not in consumed]
    return left


def recovery_scenario(scenario: Scenario, *, crashed_turn: int, journal: Journal, recovery: str) -> Scenario:
    if recovery == "resume":
        raise RecoveryNotRun("recovery 'resume' (ADK's Runner.run_async(invocation_id=...) on a resumable App) is "
                             "not run by this harness yet; declare recovery: retry or next_turn in the profile")
    if recovery not in RECOVERIES:
        raise RecoveryNotRun(f"unknown recovery {recovery!r}: one of {', '.join(RECOVERIES)}")
    session_index, position = turn_position(scenario, crashed_turn)
    crashed = scenario.sessions[session_index]
    turns = list(crashed.turns[position:] if recovery == "retry" else crashed.turns[position + 1:])
    sessions = [crashed.model_copy(update={"turns": turns or [Turn(user=CONTINUE_MESSAGE)],
                                           "id": scenario.session_id(session_index)})]
    sessions += [spec.model_copy(update={"id": scenario.session_id(i)})
                 for i, spec in enumerate(scenario.sessions) if i > session_index]
    expect = scenario.expect.model_copy(update={"executions": None})  # counted across processes: effects_exactly_once
    return scenario.model_copy(update={"name": f"{scenario.name}_recovery", "sessions": sessions,
                                       "script": remaining_script(scenario, journal), "expect": expect})


def sessions_touched(scenario: Scenario, crashed_turn: int) -> list[tuple[str, str]]:
    """(user, session id) of every session up to the crashed one: what the store must still show."""
    session_index, _ = turn_position(scenario, crashed_turn)
    return [(spec.user, scenario.session_id(i)) for i, spec in enumerate(scenario.sessions[:session_index + 1])]


def crashed_session(scenario: Scenario, crashed_turn: int) -> SessionSpec:
    return scenario.sessions[turn_position(scenario, crashed_turn)[0]]
