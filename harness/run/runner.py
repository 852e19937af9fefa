"""``run_scenario``: the one pipeline the pytest plugin and the CLI share.

scenario -> target -> run (per LLM mode) -> trace -> checks -> ScenarioResult.
Nothing here reaches back upstream: the target is built from the scenario, the
recorder fills the trace, the checks read it.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import contextlib
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from google.adk.runners import Runner

from ..checks import run_checks
from ..checks.base import CheckContext, CheckResult
from ..checks.run_rows import cassette_held, cassette_stale, script_verdict
from .clock import scenario_clock
from ..errors import CalledCodeError, CassetteError, HarnessError
from .escape_probe import escape_targets
from .failures import blamed, error_result, harness_bug
from ..recording.identity import CassetteIdentity
from ..llm.modes import LlmMode
from .script_fit import judge_script
from ..result import ScenarioResult
# Re-exported: ``from harness.run.runner import RunOptions`` (and the model settings) keeps working.
from .options import DEFAULT_MODEL, MODEL_TIMEOUT_S, RETRY_OPTIONS, RunOptions  # noqa: F401
from ..scenario.models import Scenario
from ..targets.base import BuiltTarget, SessionServiceFactory, TargetEnvironment
from ..targets.choice import TargetChoice, choose_target
from ..targets.plugins import service_on_backend
from .service_semantics import settle_with_origins
from ..targets.profile import TargetProfile
from ..targets.registry import resolve_target
from ..recording.layout import cassette_dir, rerecord_command
from ..trace.persisted import persisted_snapshot
from .service_folder import in_service_folder
from .service_probe import probe_service
from ..trace.crash import describe_error
from ..trace.model import AgentInfo, Trace, TurnOutcome, TurnRecord
from ..trace.recorder_plugin import TraceRecorderPlugin
from ..trace.recording_service import RecordingSessionService

log = logging.getLogger(__name__)


def run_scenario(scenario: Scenario, options: RunOptions = RunOptions()) -> ScenarioResult:
    # The result comes back in a box, the main task returning None: on leaving, asyncio.run (Python 3.11) restores
    # its SIGINT handler through signal's enum conversion, which formats the main task's repr, result and all,
    # twice: ~2 ms of every scenario spent writing out a whole ScenarioResult that nobody reads.
    box: list[ScenarioResult] = []

    async def main() -> None:
        box.append(await run_scenario_async(scenario, options))

    asyncio.run(main())
    return box[0]


async def run_scenario_async(scenario: Scenario, options: RunOptions = RunOptions()) -> ScenarioResult:
    """Run one scenario; the result (its trace, checks and error) holds no secret of the run (see run_secrets).

    It does not raise (but KeyboardInterrupt): what the target, its factory or its session service raises is the
    scenario's ``error`` naming that part (harness/run/failures.py), and whatever else escapes is a harness bug,
    the scenario's ``error`` too, said as such."""
    from ..recording.scrub_outputs import scrub_result
    from .model_session import run_secrets

    chosen = service_on_backend(options.session_service, options.backend)  # delta-databricks: delta on databricks
    options = replace(options, session_service=chosen.session_service, backend=chosen.backend)
    started = time.perf_counter()
    try:
        result = await _run_scenario(scenario, options)
    except Exception as exc:  # noqa: BLE001 - no part of the run owns it but the harness: a bug, reported as one
        result = error_result(scenario, options, harness_bug(exc), time.perf_counter() - started)
    return scrub_result(result, secrets=run_secrets(options))


async def _run_scenario(scenario: Scenario, options: RunOptions) -> ScenarioResult:
    started = time.perf_counter()
    try:
        choice = choose_target(scenario, target=options.target, profile=options.profile,
                               profile_path=options.profile_path, profile_is_default=options.profile_is_default)
    except HarnessError as exc:  # the scenario's profile file cannot be used
        return ScenarioResult(scenario=scenario.name, description=scenario.description,
                              target=options.target or scenario.target or "?", llm_mode=options.llm_mode.value,
                              session_service=options.session_service, checks=(), trace=None,
                              duration_s=time.perf_counter() - started, error=str(exc))
    base = dict(scenario=scenario.name, description=scenario.description, target=choice.spec,
                llm_mode=options.llm_mode.value, session_service=options.session_service)
    cassette: CheckResult | None = None

    def unjudged(error: str) -> ScenarioResult:
        return ScenarioResult(**base, checks=(), trace=None, duration_s=time.perf_counter() - started, error=error)

    try:
        trace, profile = await _drive_in_work_dir(scenario, options, choice)
        if options.llm_mode is LlmMode.REPLAY:
            cassette = cassette_held()
    except CassetteError as exc:
        if options.llm_mode is not LlmMode.REPLAY:
            return unjudged(str(exc))
        # A cassette problem says *that* something changed, not *what*: judge the same scenario against its
        # scripted model, so the report also names the invariant that broke (or shows that none did).
        try:
            trace, profile = await _drive_in_work_dir(scenario, replace(options, llm_mode=LlmMode.SCRIPTED,
                                                                         record=False), choice)
        except HarnessError as rerun:
            return unjudged(f"{exc}\nThe scripted re-run that would judge the checks failed too: {rerun}")
        cassette = cassette_stale(f"{exc}")
    except HarnessError as exc:
        return unjudged(str(exc))
    try:
        checks = run_checks(CheckContext(trace=trace, scenario=scenario, profile=profile),
                            only=scenario.expect.checks.only, skip=scenario.expect.checks.skip)
    except ValueError as exc:  # an unknown check name in the scenario's expect.checks
        return ScenarioResult(**base, checks=(), trace=trace, duration_s=time.perf_counter() - started,
                              error=f"scenario {scenario.name!r}, field 'expect.checks': {exc}")
    verdicts = ((cassette,) if cassette is not None else ()) + script_verdict(trace)
    base["session_service"] = trace.session_service or options.session_service  # what the target really used
    return ScenarioResult(**base, checks=(*checks, *verdicts), trace=trace, duration_s=time.perf_counter() - started)


async def _drive_in_work_dir(scenario: Scenario, options: RunOptions, choice: TargetChoice
                             ) -> tuple[Trace, TargetProfile]:
    with _work_dir(options) as home, in_service_folder(options, home, choice.spec) as options:
        return await _drive(scenario, options, choice, home)


@contextlib.contextmanager
def _work_dir(options: RunOptions) -> Iterator[Path]:
    if options.work_dir is not None:
        options.work_dir.mkdir(parents=True, exist_ok=True)
        yield options.work_dir.resolve()  # absolute: a user's session service runs with it as the current folder
        return
    with tempfile.TemporaryDirectory(prefix="rlm-conformance-") as tmp:
        yield Path(tmp)


def _workspace(scenario: Scenario, options: RunOptions, target_name: str, home: Path) -> Any:
    """The backend's context for one run: nothing locally, a DatabricksWorkspace on the databricks backend."""
    if options.backend == "local":
        return contextlib.nullcontext()
    from ..extras import require_extra
    from ..targets.plugins import backend as plugin_backend

    backend = plugin_backend(options.backend)  # raises naming the known backends
    if backend.extra is not None:
        require_extra(backend.extra, f"--backend {options.backend}")
    return backend.workspace(scenario, options, target_name, home)


async def _drive(scenario: Scenario, options: RunOptions, choice: TargetChoice, home: Path
                 ) -> tuple[Trace, TargetProfile]:
    with _workspace(scenario, options, choice.spec, home) as workspace:
        return await _drive_on(scenario, options, choice, home, workspace)


async def _drive_on(scenario: Scenario, options: RunOptions, choice: TargetChoice, home: Path,
                    workspace: Any) -> tuple[Trace, TargetProfile]:
    from .model_session import llm_session

    options = replace(options, cassette_dir=cassette_dir(options.cassette_dir, choice.name, options.backend))
    identity = CassetteIdentity.of(scenario, target=choice.identity, profile=choice.profile)
    rerecord = rerecord_command(scenario.name, choice.spec, options.backend, choice.profile_path)
    async with llm_session(scenario, options, rerecord=rerecord, workspace=workspace, identity=identity) as llm:
        env = TargetEnvironment(
            model=llm.endpoint.gemini(retry_options=RETRY_OPTIONS, timeout_s=_model_timeout(scenario, options)),
            model_name=options.model,
            sub_lm=llm.sub_lm,
            count_tokens=llm.count_tokens,
            home=home,
            max_iterations=scenario.max_iterations,
            context=scenario.context,
            session_service_factory=_blamed_service_factory(
                options.session_service, choice.profile.session_service_args if choice.profile else None),
            backend=options.backend,
            databricks=workspace,
            warm_executor=runs_warm_executor(scenario, options),
            profile=choice.profile,
            require_confinement=options.require_confinement,
            **_limits(scenario),
        )
        factory = resolve_target(choice.spec)
        with blamed(f"the target factory {choice.spec}"):
            built = factory(env)
        owns_service = env.session_service_factory is not None  # a service the harness built: the harness closes it
        try:
            with blamed(f"the session service {type(built.session_service).__name__} while the harness observed "
                        f"its None and stale-writer behaviour"):
                built.profile, built.semantics_origins = await settle_with_origins(
                    choice.profile or built.profile, built.session_service, observable=options.backend == "local")
            nonce = getattr(workspace, "run_nonce", None)  # a live workspace run's (reference_agent/conformance/databricks.py)
            with _credential_canaries(options) as planted, _model_routes(built, llm, scenario, options,
                                                                         nonce=nonce) as route, \
                    escape_targets(scenario.escape_probe and _job_b_runs_here(options, workspace)) as escape, \
                    scenario_clock(scenario, options, llm):  # the target's wall clock (harness/run/clock.py)
                trace = await _run_sessions(scenario, built, options, llm.mode_label)
            trace.model_route = route
            trace.planted_credentials = [*planted, *getattr(workspace, "planted", [])]
            trace.escape_probe = escape
            trace.executor_confinement = built.executor_confinement
            trace.confinement_required = options.require_confinement
            trace.token_counts = list(llm.token_counts)
        except BaseException:
            await _close(built, owns_service, failing=True)
            raise
        await _close(built, owns_service, failing=False)
        llm.raise_if_cassette_missed()
        # Inside the session: when recording, a script that does not fit raises here and nothing is saved.
        trace.script_problems = judge_script(scenario, llm, built.app.root_agent, target=choice.spec,
                                             record=options.record, refuse=not options.allow_script_misfit)
    return trace, built.profile


def runs_warm_executor(scenario: Scenario, options: RunOptions) -> bool:
    """Whether the scenario's local Job_B runs on the warm executor: its ``executor:`` pin, else the run's."""
    return (scenario.executor or options.executor) == "warm"


def _limits(scenario: Scenario) -> dict[str, Any]:
    """The scenario's limits the target applies (the model client's timeout is the harness's own)."""
    return {name: value for name, value in scenario.limits.model_dump(exclude={"model_timeout_s"}).items()
            if value is not None}


def _model_timeout(scenario: Scenario, options: RunOptions) -> float | None:
    """The client timeout of each agent model request: the scenario's, else the mode's (live: the library's)."""
    default = MODEL_TIMEOUT_S[options.llm_mode]
    if default is None:
        return None
    return scenario.limits.model_timeout_s or default


def _session_service_factory(name: str, args: dict[str, Any] | None) -> SessionServiceFactory | None:
    from ..targets.session_services import resolve_session_service

    return resolve_session_service(name, args)


def _blamed_service_factory(name: str, args: dict[str, Any] | None) -> SessionServiceFactory | None:
    """``--session-service``'s factory, called as it is, its exception said to be the constructor's (the target's
    factory calls it: without this, the target's factory would be blamed)."""
    factory = _session_service_factory(name, args)
    if factory is None:
        return None

    def build(env: TargetEnvironment) -> Any:
        with blamed(f"the session service's constructor (--session-service {name})"):
            return factory(env)

    return build


async def _close(built: BuiltTarget, owns_service: bool, *, failing: bool) -> None:
    """Close the target, then the session service the harness built for it (a target closes its own). After a
    run that failed, a close that fails too is logged: the run's own error is the one the result reports."""
    from ..targets.session_services import aclose_service

    problem: HarnessError | None = None
    try:
        with blamed("the target's close()"):
            built.close()
    except HarnessError as exc:
        problem = exc
    if owns_service:
        try:
            with blamed("the session service during close"):
                await aclose_service(built.session_service)
        except HarnessError as exc:
            problem = problem or exc
    if problem is not None and failing:
        log.warning("%s (after the run had failed already)", problem)
    elif problem is not None:
        raise problem


async def _run_sessions(scenario: Scenario, built: BuiltTarget, options: RunOptions, mode_label: str) -> Trace:
    turn_counter = {"turn": 0}
    current_turn = lambda: turn_counter["turn"]  # noqa: E731
    # One clock for events and model requests, so a check can tell which came first.
    clock = itertools.count().__next__
    service = RecordingSessionService(built.session_service, current_turn=current_turn, clock=clock,
                                      artifact_statuses=_status_reader(built, options), observer=options.observer)
    recorder = TraceRecorderPlugin(store=built.session_service, current_turn=current_turn, clock=clock)
    app = built.app.model_copy(update={"plugins": [*built.app.plugins, recorder]})
    runner = Runner(app=app, session_service=service, artifact_service=built.artifact_service,
                    memory_service=built.memory_service)
    trace = Trace(scenario=scenario.name, target=built.name, llm_mode=mode_label,
                  session_service=type(built.session_service).__name__,
                  plugins=[type(p).__name__ for p in built.app.plugins], agents=describe_agents(built.app.root_agent),
                  service_semantics=dict(built.semantics_origins))

    if options.observer is not None:  # a crash recovery reads the store as the crash left it (harness/crash/)
        await options.observer.before_turns(built, app.name, scenario)
    try:
        await (options.driver or _drive_sessions)(scenario, built, service, runner, app.name, trace, turn_counter)
    except CalledCodeError as exc:  # say what the turns before it had met: often the same failure, seen first
        earlier = [f"turn {t.turn} (session {t.session_id}) had raised {t.outcome.crash.describe()}"
                   for t in trace.turns if t.outcome.crash is not None and not t.outcome.crash.expected]
        if not earlier:
            raise
        raise CalledCodeError(f"{exc}. Before that, {'; '.join(earlier)}") from exc.__cause__

    if options.keep_adk_sessions or scenario.expect.adk_session is not None:
        trace.adk_sessions = await _adk_sessions(scenario, built, app.name)
    trace.service_probe = await probe_service(built.session_service, spec=options.session_service,
                                              backend=options.backend, target=built.profile,
                                              origins=built.semantics_origins,
                                              enabled=options.probe_session_service, share=options.probe_share)
    trace.events = service.records
    trace.llm_requests = recorder.requests
    trace.llm_responses = recorder.responses
    trace.live_states = recorder.live_states
    return trace


async def _run_turn_with_delta(built: BuiltTarget, runner: Runner, user_id: str, session_id: str,
                               turn: Any) -> TurnOutcome:
    """A turn whose message carries a state delta: only a turn function that takes ``state_delta`` can send it."""
    if "state_delta" not in inspect.signature(built.run_turn).parameters:
        raise HarnessError(f"A turn of this scenario sends a state_delta with its message, and target "
                           f"{built.name!r} drives turns with a function that cannot pass one. Fix: run the "
                           f"scenario against an App or agent the harness builds (--target module:attr), or drop "
                           f"the turn's state_delta.")
    return await built.run_turn(runner, user_id, session_id, turn.user, state_delta=dict(turn.state_delta))


async def _adk_sessions(scenario: Scenario, built: BuiltTarget, app_name: str) -> dict[str, Any]:
    """Every session of the scenario as the target's service returns it now (ADK's JSON dump)."""
    kept = {}
    for index, spec in enumerate(scenario.sessions):
        session_id = scenario.session_id(index)
        with blamed("the session service during get_session"):
            session = await built.session_service.get_session(app_name=app_name, user_id=spec.user,
                                                              session_id=session_id)
        if session is not None:
            kept[session_id] = session.model_dump(mode="json", exclude_none=True)
    return kept


async def _drive_sessions(scenario: Scenario, built: BuiltTarget, service: RecordingSessionService, runner: Runner,
                          app_name: str, trace: Trace, turn_counter: dict[str, int]) -> None:
    """Every session's turns, into ``trace``. The harness's own calls to the session service and the target
    are ``blamed`` on them: what they raise ends the run as a ``CalledCodeError`` naming the call."""
    store = built.session_service
    snapshot_read = "persisted_rows" if getattr(store, "persisted_rows", None) is not None else "get_session"
    for index, spec in enumerate(scenario.sessions):
        session_id = scenario.session_id(index)
        with blamed("the session service during get_session"):
            found = await service.get_session(app_name=app_name, user_id=spec.user, session_id=session_id)
        if found is None:
            trace.created_with[session_id] = {**built.initial_state, **spec.initial_state}
            with blamed("the session service during create_session"):
                await service.create_session(app_name=app_name, user_id=spec.user, session_id=session_id,
                                             state=trace.created_with[session_id] or None)
        for position, turn in enumerate(spec.turns):
            run_error = None
            try:
                outcome = await (built.run_turn(runner, spec.user, session_id, turn.user) if not turn.state_delta
                                 else _run_turn_with_delta(built, runner, spec.user, session_id, turn))
            except HarnessError:
                raise
            except Exception as exc:  # the target's runner crashed: the turn's error, and the checks still judge
                outcome, run_error = TurnOutcome(crash=describe_error(exc)), f"{type(exc).__name__}: {exc}"
            declared = expected_error(scenario, spec, position)
            if outcome.crash is not None and declared is not None:
                text = f"{outcome.crash.type}: {outcome.crash.message} {outcome.crash.cause or ''}"
                outcome = outcome.model_copy(update={"crash": outcome.crash.model_copy(
                    update={"expected": declared in text or declared in (outcome.error or "")})})
            trace.turns.append(TurnRecord(turn=turn_counter["turn"], session_id=session_id, user_id=spec.user,
                                          message=turn.user, outcome=outcome, run_error=run_error))
            with blamed(f"the session service during {snapshot_read}"):
                trace.persisted.append(await persisted_snapshot(store, app_name=app_name, user_id=spec.user,
                                                                session_id=session_id, turn=turn_counter["turn"]))
            turn_counter["turn"] += 1
        if built.list_executions is not None:
            with blamed("the target's list_executions"):
                trace.executions.extend(built.list_executions(app_name, spec.user, session_id))


@contextlib.contextmanager
def _model_routes(built: BuiltTarget, llm: Any, scenario: Scenario, options: RunOptions, *,
                  nonce: str | None = None) -> Iterator[str]:
    """Where the target's model calls go, said in words for the report; for targets built from an App or agent,
    the model gateway for the agent's own clients and, offline, deterministic ids (harness/run/determinism.py),
    seeded also by a live workspace run's nonce (``nonce``: ids unique per run there, and the same on its replay)."""
    route = {LlmMode.REPLAY: f"replay of the cassettes in {options.cassette_dir}/",
             LlmMode.SCRIPTED: "the scenario's script on a local Gemini-compatible endpoint",
             LlmMode.LIVE: f"Gemini API ({options.model})"}[options.llm_mode]
    if not built.routes_model_environment:
        yield f"{route}, for every LlmAgent and the executor's sub-LM bridge"
        return
    from .determinism import deterministic_ids
    from ..llm.gateway import ModelGateway, routed_model_environment

    endpoint = llm.endpoint
    offline = options.llm_mode is not LlmMode.LIVE
    # A call to the gateway is recorded and replayed once, as the gateway forwards it (LlmSession.forwarding_gateway).
    with ModelGateway(upstream=endpoint.base_url, api_key=endpoint.api_key,
                      replay=options.llm_mode is LlmMode.REPLAY) as gateway, llm.forwarding_gateway(gateway.base_url), \
            routed_model_environment(gateway), (
            deterministic_ids(f"{scenario.name}:{nonce}" if nonce else scenario.name) if offline
            else contextlib.nullcontext()):
        yield (f"{route}, for every LlmAgent (the harness's model set on each) and the agent's own google-genai "
               f"clients (GOOGLE_GEMINI_BASE_URL -> the harness's model gateway)")


def _job_b_runs_here(options: RunOptions, workspace: Any) -> bool:
    """Whether the target's Job_B runs on this machine (the local backend, the databricks backend's workspace fake),
    where the escape probe's targets can be planted and watched; not on replay of a workspace, nor a real one."""
    return options.backend == "local" or bool(getattr(workspace, "job_b_runs_here", False))


def _credential_canaries(options: RunOptions) -> Any:
    """Canary credentials in the environment while the target runs (harness/checks/canaries.py), where it is safe."""
    if options.backend == "local" and options.llm_mode in (LlmMode.REPLAY, LlmMode.SCRIPTED):
        from ..checks.canaries import planted_credentials

        return planted_credentials()
    return contextlib.nullcontext([])


def _status_reader(built: BuiltTarget, options: RunOptions) -> Any:
    """Artifact statuses after each event, where listing them is a local read (not replayed workspace calls)."""
    if options.backend != "local":
        return None
    if built.artifact_statuses is not None:
        return built.artifact_statuses
    if built.list_executions is None:
        return None
    list_executions = built.list_executions
    return lambda app, user, session: {x.artifact_id: x.status for x in list_executions(app, user, session)}


def expected_error(scenario: Scenario, spec: Any, position: int) -> str | None:
    """The error text the scenario declares for this turn: its ``expect_error``, or ``expect.outcome_error``
    for the scenario's very last turn."""
    declared = spec.turns[position].expect_error
    last = spec is scenario.sessions[-1] and position == len(spec.turns) - 1
    return declared if declared is not None else scenario.expect.outcome_error if last else None


def code_executor_info(agent: Any) -> dict[str, Any]:
    """AgentInfo's fields for an LlmAgent's ADK code executor (none: empty): its class, delimiters, side."""
    from google.adk.code_executors import BaseCodeExecutor, BuiltInCodeExecutor

    executor = getattr(agent, "code_executor", None)
    if not isinstance(executor, BaseCodeExecutor):
        return {}
    return {"code_executor": type(executor).__name__,
            "code_block_delimiters": [tuple(d) for d in executor.code_block_delimiters],
            "model_side_execution": isinstance(executor, BuiltInCodeExecutor),
            "code_error_retry_attempts": executor.error_retry_attempts}


def describe_agents(root: Any, parent: str | None = None) -> list[AgentInfo]:
    """Name, kind, output_key, instruction kind and tools of every agent in the tree."""
    instruction = getattr(root, "instruction", None)
    kind = "none" if not instruction else "string" if isinstance(instruction, str) else "provider"
    tools = []
    for tool in getattr(root, "tools", None) or []:
        tools.append(getattr(tool, "name", None) or getattr(tool, "__name__", type(tool).__name__))
    from google.adk.agents import LlmAgent

    info = AgentInfo(name=root.name, kind=type(root).__name__, llm_agent=isinstance(root, LlmAgent), parent=parent,
                     output_key=getattr(root, "output_key", None), instruction_kind=kind,
                     instruction_text=instruction if isinstance(instruction, str) else None, tools=tools,
                     has_before_agent_callback=bool(getattr(root, "before_agent_callback", None)),
                     **code_executor_info(root))
    agents = [info]
    for child in getattr(root, "sub_agents", None) or []:
        agents.extend(describe_agents(child, root.name))
    return agents
