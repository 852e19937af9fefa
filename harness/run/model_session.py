"""The model side of one scenario run, per LLM mode: endpoint, sub-LM, cassette and network guard.

``replay`` loads ``cassettes/<scenario>.yaml`` and refuses the network;
``scripted`` starts the local endpoint with the scenario's script (and records
the cassette when asked); ``live`` talks to Gemini (and records when asked).
Misses during replay are collected here and raised after the run as one
explained ``CassetteError`` — inside the run ADK would turn them into an
ordinary model error and the scenario would look like a target failure.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from google.genai import types

from ..errors import CassetteError
from ..trace.model import TokenCountRecord
from harness.recording.misses import assert_all_played
from harness.recording.persister import Provenance
from harness.recording.recorder import filter_each_request_once, make_vcr, origin_of, pass_by, use_cassette
from ..recording.drift import Drift, watch_drift
from ..llm.genai import genai_sub_lm, genai_token_counter
from ..recording.identity import CassetteIdentity
from ..llm.replay_delays import replay_recorded_delays, with_recorded_delay
from ..llm.client_timeouts import record_client_timeouts, replay_client_timeouts
from ..recording.scrub_outputs import scrubbing_log_records
from ..recording.matchers import caller, caller_of
from ..llm.modes import API_KEY_VARIABLES, DUMMY_API_KEYS, LlmMode, ModelEndpoint, endpoint_for

if TYPE_CHECKING:
    from .options import RunOptions
    from ..scenario.models import Scenario

MATCH_ON = ("method_ci", "scheme", "host", "port", "path", "query", "rlm_caller")


@dataclass
class LlmSession:
    endpoint: ModelEndpoint
    mode_label: str
    scenario: str
    rerecord: str
    misses: list[Any] = field(default_factory=list)
    # Replayed model calls whose request is not the one recorded (harness/recording/drift.py).
    drift: list[Drift] = field(default_factory=list)
    cassette_path: Any = None
    # What harness/run/script_fit.py judges after the run: the scripted endpoint (scripted mode) and the
    # vcrpy cassette (replay, or recording); None otherwise.
    scripted: Any = None
    cassette: Any = None
    # Every countTokens call the target made through ``count_tokens``, in order (the trace keeps them).
    token_counts: list[TokenCountRecord] = field(default_factory=list)
    # Origins of the model gateways running now (``forwarding_gateway``): the cassette lets calls to them by.
    gateway_origins: set[str] = field(default_factory=set)
    _sub_lm: Any = None
    _count_tokens: Any = None

    async def sub_lm(self, prompt: str) -> str:
        if self.mode_label == LlmMode.REPLAY.value:  # as long as the recorded answer took (harness/llm/replay_delays.py)
            return await with_recorded_delay(self._sub_lm(prompt))
        return await self._sub_lm(prompt)

    async def count_tokens(self, text: str) -> int:
        """The model's token count of ``text`` (countTokens endpoint, in the cassette like any model call)."""
        tokens = await self._count_tokens(text)
        self.token_counts.append(TokenCountRecord(index=len(self.token_counts), text=text, tokens=tokens))
        return tokens

    @contextlib.contextmanager
    def forwarding_gateway(self, base_url: str) -> Iterator[None]:
        """While the model gateway at ``base_url`` runs, calls to it pass the cassette by and only the call it
        forwards is recorded and replayed: once, for an in-process client as for a subprocess's (cassettes.pass_by).
        """
        origin = origin_of(base_url)
        self.gateway_origins.add(origin)
        try:
            yield
        finally:
            self.gateway_origins.discard(origin)

    def raise_if_drifted(self) -> None:
        if not self.drift:
            return
        first = self.drift[0]
        raise CassetteError(
            f"Scenario {self.scenario!r}: the cassette {self.cassette_path} is stale. {len(self.drift)} replayed "
            f"model call(s) sent a request other than the one recorded (the agent's prompt, tools or settings "
            f"changed since recording), so the recorded answers belong to other requests. First: {first.describe()} "
            f"Re-record with: {self.rerecord} (and review the diff), or replay anyway with --allow-drift."
        )

    def raise_if_cassette_missed(self) -> None:
        if not self.misses:
            return
        request, played_before = self.misses[0]
        who = caller_of(request)
        raise CassetteError(
            f"Scenario {self.scenario!r}: model call #{played_before + 1} of {who[:60]!r} "
            f"({request.method.upper()} {request.path}) is not in the cassette: the run made a call that was "
            f"not recorded ({len(self.misses)} unrecorded call(s) in all). CI only replays and never records; if "
            f"the change is intended, re-record with: {self.rerecord}"
        )


@contextlib.asynccontextmanager
async def llm_session(scenario: "Scenario", options: "RunOptions", *, rerecord: str, workspace: Any = None,
                      identity: CassetteIdentity | None = None) -> AsyncIterator[LlmSession]:
    """``workspace``: the run's DatabricksWorkspace (databricks backend), whose REST calls share the cassette.
    ``identity``: what the cassette is for (harness/recording/identity.py): written when recording, compared on replay."""
    mode = options.llm_mode
    with contextlib.ExitStack() as stack:
        scripted = None
        if mode is LlmMode.SCRIPTED:
            from ..llm.scripted_endpoint import ScriptedEndpoint

            scripted = stack.enter_context(ScriptedEndpoint(
                scenario.script, on_served=getattr(options.observer, "model_step_served", None)))
        endpoint = endpoint_for(mode, model=options.model, scripted_base_url=scripted.base_url if scripted else None)
        session = LlmSession(endpoint=endpoint, mode_label=mode.value, scenario=scenario.name, rerecord=rerecord,
                             scripted=scripted)
        if workspace is not None and mode is not LlmMode.REPLAY:  # the fake's Job_B calls the model itself
            workspace.give_job_b_the_model(endpoint.base_url, endpoint.api_key)
        stack.enter_context(scrubbing_log_records(run_secrets(options, endpoint)))
        cassette = None
        if mode is LlmMode.REPLAY or options.record:
            cassette = session.cassette = stack.enter_context(_cassette(scenario.name, options, endpoint, session,
                                                                        workspace, identity))
        live_workspace = workspace is not None and workspace.recorded_against == "databricks-live"
        if mode is LlmMode.REPLAY or (mode is LlmMode.SCRIPTED and not live_workspace):
            # Offline modes stay offline: the scripted endpoint and a local workspace fake are on loopback.
            from ..llm.network_guard import NetworkGuard

            stack.enter_context(NetworkGuard(record_hint=f"re-record with: {rerecord}"))
        # Built at the first sub-LM or countTokens call, inside the cassette and the guard like the rest of the run.
        client = functools.cache(lambda: endpoint.genai_client(
            http_options=types.HttpOptions(retry_options=_sub_lm_retries())))
        session._sub_lm = genai_sub_lm(client, options.model)
        session._count_tokens = genai_token_counter(client, options.model)
        yield session
        if cassette is not None and mode is LlmMode.REPLAY and not session.misses:
            assert_all_played(cassette, scenario=scenario.name, rerecord_command=rerecord)
            if not options.allow_drift:
                session.raise_if_drifted()


def run_secrets(options: RunOptions, endpoint: ModelEndpoint | None = None) -> list[str]:
    """Values no cassette, trace, report or log of the run may hold: ``options.secrets`` and a live API key."""
    if endpoint is not None:
        keys = [endpoint.api_key]
    else:
        keys = [os.environ.get(name, "") for name in API_KEY_VARIABLES] if options.llm_mode is LlmMode.LIVE else []
    return [value for value in dict.fromkeys([*options.secrets, *keys]) if value and value not in DUMMY_API_KEYS]


def _sub_lm_retries() -> types.HttpRetryOptions:
    """The agent's model's retry policy (harness/run/options.py) for the sub-LM client too."""
    from . import options as run_options

    return run_options.RETRY_OPTIONS


@contextlib.contextmanager
def _cassette(name: str, options: "RunOptions", endpoint: ModelEndpoint, session: LlmSession, workspace: Any = None,
              identity: CassetteIdentity | None = None):
    path = options.cassette_dir / f"{name}.yaml"
    session.cassette_path = path
    if options.llm_mode is LlmMode.REPLAY and not path.exists():
        raise CassetteError(
            f"Scenario {name!r}: cassette {path} does not exist, and replay never records. Record it with: "
            f"{session.rerecord}"
        )
    if options.llm_mode is LlmMode.REPLAY and path.is_file() and not path.read_bytes().strip():
        raise CassetteError(f"Scenario {name!r}: cassette {path} is empty, so replay has nothing to play. Delete it "
                            f"and record it again with: {session.rerecord}")
    provenance = Provenance(recorded_against="live" if options.llm_mode is LlmMode.LIVE else "scripted",
                            model=options.model)
    secrets = run_secrets(options, endpoint)
    if workspace is not None:  # databricks backend: what the cassette says it was recorded against is the workspace
        provenance = Provenance(recorded_against=workspace.recorded_against, model=options.model)
        secrets += workspace.secrets
    recorder = make_vcr(cassette_dir=options.cassette_dir, record_mode="none" if options.llm_mode is LlmMode.REPLAY
                        else "all", provenance=provenance, secrets=secrets, rerecord=session.rerecord,
                        identity=identity)
    recorder.register_matcher("rlm_caller", caller)
    recorder.match_on = MATCH_ON
    if workspace is not None:
        workspace.configure_vcr(recorder)  # the workspace's host and ids become the cassette's placeholders
    pass_by(recorder, session.gateway_origins)  # last: a call to the gateway is recorded as the gateway forwards it
    with use_cassette(recorder, name) as cassette:
        _spy_on_misses(cassette, session)
        if cassette.write_protected:
            filter_each_request_once(cassette)
            watch_drift(cassette, session.drift.append)
            replay_recorded_delays(cassette)
        if workspace is not None:
            workspace.attach(cassette)  # recording: its metadata; replay: an index of its hundreds of REST calls
        replay_client_timeouts(cassette)
        with contextlib.nullcontext() if cassette.write_protected else record_client_timeouts(cassette):
            yield cassette


def _spy_on_misses(cassette: Any, session: LlmSession) -> None:
    """Remember every request replay could not answer (vcrpy then raises inside the HTTP client); a request the
    cassette lets by (a call to the model gateway, which replays the call it forwards) is no miss."""
    original = cassette.can_play_response_for
    played = Counter()

    def can_play(request: Any) -> bool:
        ok = original(request)
        who = caller_of(request)
        if ok:
            played[who] += 1
        elif cassette.write_protected and cassette.filter_request(request) is not None:
            session.misses.append((request, played[who]))
        return ok

    cassette.can_play_response_for = can_play
