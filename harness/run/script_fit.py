"""Did a run's model traffic follow the scenario's script? What ``record`` refuses and a scripted ``run`` reports.

Three ways a script does not fit, each a ``Problem`` at the scenario's file:line:

* a ``script:`` key names no agent of the target (a typo such as ``planer:``; ``sub_lm`` is Job_B's key),
  with a did-you-mean among the target's agents;
* a model call got an HTTP error the script did not declare — the scripted endpoint's 400 for a call past
  the end of an agent's steps or from an agent the script has no key for (a ``FaultStep`` is declared);
  when recording live, an error answer of the model beyond the faults the script declares;
* a scripted step was never asked for.

Recording refuses all three by raising inside the cassette's context, where vcrpy (``record_on_exception``
off) saves nothing: no cassette is written and an existing one stays as it was. A scripted ``run`` reports
them as the scenario's ``script`` row, failing, *beside* its checks — as a stale cassette is the failing
``cassette`` row: an agent that calls its model more or less often than scripted is often the very bug a
check names (stale glue re-running the processor, a processor skipped), so the checks still judge the run.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..scenario.loader import Problem, ScenarioError, problem_at
from ..scenario.script import SUB_LM, FaultStep

if TYPE_CHECKING:
    from ..scenario.models import Scenario
    from .model_session import LlmSession

GEMINI_HOST = "generativelanguage.googleapis.com"
FAULT_STATUS = {"http_429": 429, "http_500": 500, "http_503": 503, "slow": 408}
"""The status a declared fault leaves in a cassette (``slow``: the client's timeout, recorded as a marked 408)."""


def agent_names(root: Any) -> set[str]:
    """Every agent of the tree under ``root``: sub-agents, and agents wrapped as tools (``AgentTool``)."""
    names: set[str] = set()
    pending = [root]
    while pending:
        agent = pending.pop()
        if agent.name in names:
            continue
        names.add(agent.name)
        pending += list(getattr(agent, "sub_agents", None) or ())
        pending += [tool.agent for tool in getattr(agent, "tools", None) or ()
                    if isinstance(getattr(getattr(tool, "agent", None), "name", None), str)]
    return names


def unknown_keys(scenario: Scenario, agents: Iterable[str]) -> list[str]:
    """The ``script:`` keys that are neither an agent in ``agents`` nor ``sub_lm``."""
    known = set(agents)
    return [key for key in scenario.script if key != SUB_LM and key not in known]


def unknown_key_problems(scenario: Scenario, agents: Iterable[str], *, target: str) -> list[Problem]:
    """A problem, with a did-you-mean, for every ``script:`` key that names no agent of the target."""
    known = sorted(set(agents))
    problems = []
    for key in unknown_keys(scenario, known):
        guess = difflib.get_close_matches(key, [*known, SUB_LM], n=1, cutoff=0.6)
        fix = f"did you mean '{guess[0]}'? Rename the key" if guess else "use one of those names"
        problems.append(problem_at(scenario, ("script", key), (
            f"no agent of target {target!r} is named {key!r} (its agents: {', '.join(known)}; '{SUB_LM}' is for "
            f"llm_query calls of executed code). Fix: {fix}")))
    return problems


def traffic_problems(scenario: Scenario, llm: LlmSession, *, skip: Iterable[str] = ()) -> list[Problem]:
    """Undeclared HTTP errors and never-asked steps of a scripted run (``skip``: keys already reported)."""
    endpoint = llm.scripted
    if endpoint is None:
        return []
    problems: list[Problem] = []
    unanswered: dict[str, list[int]] = {}
    for call in endpoint.calls:
        if call.step is None:
            unanswered.setdefault(call.agent, []).append(call.index)
    for agent, indexes in unanswered.items():
        steps = len(scenario.script.get(agent, ()))
        has = f"script.{agent} has {steps} step(s)" if agent in scenario.script else f"the script has no '{agent}' key"
        problems.append(problem_at(scenario, ("script", agent) if agent in scenario.script else ("script",), (
            f"agent {agent!r} called its model {steps + len(indexes)} time(s) but {has}: call index "
            f"{', '.join(map(str, indexes))} got HTTP 400 from the scripted endpoint, an error the script does not "
            f"declare. Fix: add the step(s) the agent needs (a declared fault is a '- fault: ...' step), or find why "
            f"the agent calls its model more often than scripted")))
    for reason in endpoint.refused:
        problems.append(problem_at(scenario, ("script",), f"the scripted endpoint refused a request ({reason}). "
                                                          "Fix: the target calls a model route the endpoint does "
                                                          "not serve; see harness/llm/scripted_endpoint.py"))
    skipped = set(skip)
    for agent, left in endpoint.unserved().items():
        if agent in skipped:
            continue
        first = len(scenario.script[agent]) - left
        problems.append(problem_at(scenario, ("script", agent, first), (
            f"{left} step(s) of script.{agent} from index {first} on were never asked for: {agent} called its "
            f"model only {first} time(s). Fix: remove the step(s), or find why the agent calls its model less "
            f"often than scripted (did a turn end early? see its termination)")))
    return problems


def live_error_problems(scenario: Scenario, llm: LlmSession) -> list[Problem]:
    """Error answers of the live model in the cassette being recorded, beyond the faults the script declares.

    A live model cannot be told to fail, so normally every error answer is undeclared; a scenario whose
    script declares faults (``http_500`` ..., ``slow`` for a recorded client timeout) may hold that many.
    """
    cassette = llm.cassette
    if cassette is None or llm.scripted is not None:
        return []
    declared = Counter(FAULT_STATUS[step.fault] for steps in scenario.script.values() for step in steps
                       if isinstance(step, FaultStep) and step.fault in FAULT_STATUS)
    problems = []
    for number, (request, response) in enumerate(getattr(cassette, "data", ())):
        code = ((response or {}).get("status") or {}).get("code")
        if urlsplit(request.uri).hostname != GEMINI_HOST or not isinstance(code, int) or code < 400:
            continue
        if declared[code] > 0:
            declared[code] -= 1
            continue
        problems.append(problem_at(scenario, ("script",), (
            f"the live model answered HTTP {code} to interaction #{number} ({request.method.upper()} "
            f"{request.path}), and the script declares no (more) fault answering {code}: a cassette must not "
            f"hold an error the scenario does not declare. Fix: record again when the model answers; to test that "
            f"error, script it as a fault and record with --llm-mode scripted")))
    return problems


def judge_script(scenario: Scenario, llm: LlmSession, root_agent: Any, *, target: str, record: bool,
                 refuse: bool = True) -> list[str]:
    """The run's script problems, one line each (the ``script`` row); when recording, raises ``ScenarioError``
    (unless ``refuse`` is off: ``record --allow-script-misfit``, for a deliberately broken target).

    The raise happens inside the cassette's context, so vcrpy saves nothing.
    """
    problems: list[Problem] = []
    if llm.scripted is not None:  # the names ADK put in requests count too: an agent the tree walk missed
        agents = agent_names(root_agent) | {call.agent for call in llm.scripted.calls}
        problems += unknown_key_problems(scenario, agents, target=target)
        problems += traffic_problems(scenario, llm, skip=unknown_keys(scenario, agents))
    if record:
        problems += live_error_problems(scenario, llm)
        if problems and refuse:
            raise ScenarioError(problems)
    return [str(problem) for problem in problems]
