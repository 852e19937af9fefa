"""``rlm-conformance export adk-test``: scenarios -> `adk test` fixtures (``<agent dir>/tests/<scenario>.json``) that
ADK's own runner (``adk test``: pytest over ``google.adk.cli.agent_test_runner``) replays and passes on a correct
agent. ADK 2.x only: ADK 1.x has no `adk test`.

The agent folder is the one the target names: ``--target package.module:attr`` whose module is the folder's
``agent.py`` (or ``__init__.py``) and whose attribute is ``app`` or ``root_agent`` — what ADK's ``AgentLoader``
looks for; it is loaded with ``AgentLoader`` before anything runs, and refused with the reason when it cannot be.
Each scenario is run once in scripted mode, keeping its sessions as the target's service returns them; each
session's events become a fixture in the form ``rebuild_tests`` writes: partial events dropped, ids ``e-N`` and
function calls ``fc-N`` by ADK's own normalisation, invocations ``i-N``, timestamps, usage metadata, model version
and thought signatures left out, empty actions dropped; ``state`` is the state the session ended with.

Refused, one by one with the reason: a scenario that does not run cleanly, one whose code asks the sub-model
(``sub_lm`` in its script: ADK's runner serves only the agents' own model calls), one whose turns send a
``state_delta`` (ADK's runner sends only the message), one whose run made model calls that leave no event in the
session (an AgentTool's agent: ADK's mock would run out of contents), a session that does not start with the
user's text message (ADK's runner skips it). A session created with state is exported with a note: ADK's
runner starts every fixture from an empty state.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..scenario.script import SUB_LM
from .evalset import Refusal

if TYPE_CHECKING:
    from ..run.options import RunOptions
    from ..scenario.models import Scenario

AGENT_FILES = ("agent.py", "__init__.py")
LOADED_ATTRS = ("app", "root_agent")  # what ADK's AgentLoader takes from an agent folder's module
# What rebuild_tests leaves out of a fixture's events (its exclude set; id/invocation ids are renumbered instead).
LEFT_OUT = {"timestamp", "usage_metadata", "model_version", "avg_logprobs", "cache_metadata", "logprobs_result",
            "citation_metadata", "interaction_id", "turn_complete"}


class AdkTestExportError(HarnessError):
    """No fixture can be written: ADK 1.x, or a target that is not an agent folder ADK's AgentLoader loads."""


@dataclass(frozen=True)
class Fixture:
    path: Path
    text: str
    notes: tuple[str, ...] = ()


def agent_folder(target: str | None) -> Path:
    """The agent folder ``target`` (``package.module:attr``) names, checked by loading it with ADK's AgentLoader."""
    import importlib.util

    from adk_compat import HAS_ADK_TEST_RUNNER

    if not HAS_ADK_TEST_RUNNER:
        raise AdkTestExportError("export adk-test writes fixtures for `adk test`, which ADK 1.x does not have "
                                 "(google.adk.cli.agent_test_runner is ADK 2.x's). Fix: install google-adk 2.x, or "
                                 "export an eval set (export evalset --out FILE), which both lines run.")
    module, _, attr = (target or "").partition(":")
    fix = ("Fix: --target package.agent_folder.agent:app (or :root_agent), the agent.py of the folder `adk test` "
           "loads.")
    if not attr:
        raise AdkTestExportError(f"export adk-test needs the agent folder's module, got --target {target!r}. {fix}")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise AdkTestExportError(f"--target {target}: module {module} cannot be found ({exc}). {fix}") from None
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    if origin is None or origin.name not in AGENT_FILES or attr not in LOADED_ATTRS:
        raise AdkTestExportError(f"--target {target}: ADK's AgentLoader loads `app` or `root_agent` from an agent "
                                 f"folder's agent.py or __init__.py; this names {attr!r} in "
                                 f"{origin.name if origin else module}. {fix}")
    folder = origin.parent
    _load_as_adk_does(folder, target)
    return folder


def _load_as_adk_does(folder: Path, target: str) -> None:
    from google.adk.cli.utils.agent_loader import AgentLoader

    saved = list(sys.path)
    sys.path.insert(0, str(folder.parent))  # as ADK's runner does, so the folder's relative imports work
    try:
        loader = AgentLoader(str(folder.parent))
        loader.remove_agent_from_cache(folder.name)  # a folder of the same name loaded before is not this one
        loader.load_agent(folder.name)
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises, ADK's runner would meet it too
        raise AdkTestExportError(f"--target {target}: ADK's AgentLoader cannot load the agent folder {folder} "
                                 f"({type(exc).__name__}: {exc}). Fix: make `adk run {folder}` work first.") from None
    finally:
        sys.path[:] = saved


def fixture_json(session: Any, *, user_id: str) -> str:
    """One session's events as ``rebuild_tests`` writes a fixture (``session``: an ADK Session)."""
    from adk_compat import normalize_adk_test_ids

    events = normalize_adk_test_ids([event.model_copy(deep=True) for event in session.events])
    invocations: dict[str, str] = {}
    dumped = []
    for event in events:
        event.invocation_id = invocations.setdefault(event.invocation_id, f"i-{len(invocations) + 1}")
        data = event.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=LEFT_OUT)
        for part in (data.get("content") or {}).get("parts") or ():
            part.pop("thoughtSignature", None)
        if "actions" in data:
            data["actions"] = {k: v for k, v in data["actions"].items() if not (isinstance(v, dict) and not v)}
            if not data["actions"]:
                del data["actions"]
        dumped.append(data)
    fixture = {"appName": session.app_name, "userId": user_id, "state": dict(session.state), "events": dumped}
    return json.dumps(fixture, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _starts_with_user_text(session: Any) -> bool:
    first = session.events[0] if session.events else None
    parts = list(first.content.parts or ()) if first is not None and first.content is not None else []
    return first is not None and first.author == "user" and bool(parts) and parts[0].text is not None


def _unserved_calls(trace: Any, fixtures: Sequence[Fixture]) -> str:
    """The agents whose model calls in the run outnumber the model contents ADK's runner would serve from the
    fixtures (``agent: calls/served``), empty when every call is there to serve."""
    from collections import Counter

    from .adk_test import served_model_contents

    calls = Counter(response.agent for response in trace.llm_responses)
    served: Counter[str] = Counter()
    for fixture in fixtures:
        events = json.loads(fixture.text)["events"]
        served.update(event.get("author", "") for _, event in served_model_contents(events))
    return ", ".join(f"{agent}: {n} call(s), {served[agent]} served" for agent, n in sorted(calls.items())
                     if n > served[agent])


def export_fixtures(scenarios: Sequence[Scenario], options: RunOptions, *, folder: Path,
                    log: Any = None) -> tuple[list[Fixture], list[Refusal]]:
    """The fixtures of ``scenarios`` for the agent folder ``folder`` (not written), and the scenarios refused."""
    from google.adk.sessions import Session

    from ..llm.modes import LlmMode
    from ..run.runner import run_scenario

    options = dataclasses.replace(options, llm_mode=LlmMode.SCRIPTED, record=False, keep_adk_sessions=True)
    fixtures, refused = [], []
    for scenario in scenarios:
        if scenario.script.get(SUB_LM):
            refused.append(Refusal(f"scenario {scenario.name}", "its code asks the sub-model (script sub_lm); ADK's "
                                   "runner serves only the agents' own model calls, so the replay would call a "
                                   "real model. Fix: export an eval set, or keep it a scenario"))
            continue
        with_delta = [f"{i}.{n}" for i, spec in enumerate(scenario.sessions) for n, t in enumerate(spec.turns)
                      if t.state_delta]
        if with_delta:
            refused.append(Refusal(f"scenario {scenario.name}", f"turn(s) {', '.join(with_delta)} (session.turn) send "
                                   f"a state_delta with the message; ADK's runner sends only the message"))
            continue
        result = run_scenario(scenario, options)
        crashed = result.crashed_turns
        if result.error or crashed or result.trace is None:
            refused.append(Refusal(f"scenario {scenario.name}", result.error or
                                   f"turn {crashed[0].turn} raised {crashed[0].outcome.error or crashed[0].run_error}"))
            continue
        several = len(scenario.sessions) > 1
        made: list[Fixture] = []
        for index, spec in enumerate(scenario.sessions):
            where = f"scenario {scenario.name}" + (f", session {index}" if several else "")
            dumped = result.trace.adk_sessions.get(scenario.session_id(index))
            if dumped is None:
                refused.append(Refusal(where, "the session service returned no session at the end"))
                continue
            session = Session.model_validate(dumped)
            if not _starts_with_user_text(session):
                refused.append(Refusal(where, "its first event is not the user's text message; ADK's runner skips "
                                              "such a fixture"))
                continue
            created = result.trace.created_with.get(session.id, dict(spec.initial_state))
            notes = (f"created with state ({', '.join(sorted(created))}); ADK's runner starts every fixture from "
                     f"an empty state, so its replay runs without it",) if created else ()
            name = f"{scenario.name}_{index}" if several else scenario.name
            made.append(Fixture(folder / "tests" / f"{name}.json", fixture_json(session, user_id=spec.user), notes))
        unserved = _unserved_calls(result.trace, made)
        if unserved:
            refused.append(Refusal(f"scenario {scenario.name}", f"model call(s) that leave no event in the session "
                                   f"({unserved}: an AgentTool's agent, a model asked in-process); ADK's runner "
                                   f"serves only the model contents a fixture's events hold"))
        else:
            fixtures.extend(made)
        if log is not None:
            log(scenario.name, result)
    return fixtures, refused


def cmd_export_adk_test(args: Any, load: Any, make_options: Any, preflight: Any, console: Any) -> int:
    """The command: the agent folder checked first (nothing runs for a target ADK cannot load), every scenario run,
    then every fixture written atomically. Exit 0 when all were exported, 1 when some were refused."""
    from ..init.project import write_atomic

    if args.out is not None:
        raise AdkTestExportError("export adk-test writes into the agent folder of --target (<folder>/tests/); it "
                                 "takes no --out. Fix: leave --out out.")
    folder = agent_folder(args.target)
    scenarios = load(args.scenarios_dir, args.scenario, args.substring)
    options = make_options(args, record=False)
    preflight(scenarios, options)
    fixtures, refused = export_fixtures(scenarios, options, folder=folder, log=lambda name, result: console.print(
        f"ran {name}: {result.status}", markup=False, soft_wrap=True))
    for fixture in fixtures:
        write_atomic(fixture.path, fixture.text)
        console.print(f"wrote {fixture.path}", markup=False, soft_wrap=True)
        for note in fixture.notes:
            console.print(f"  note: {note}", markup=False, style="yellow", soft_wrap=True)
    for refusal in refused:
        console.print(f"not exported {refusal}", markup=False, style="bold red", soft_wrap=True)
    if fixtures:
        console.print(f"Run them with ADK: adk test {folder}", markup=False, soft_wrap=True)
    return 1 if refused or not fixtures else 0
