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
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from google.genai import types

from ..errors import CassetteError
from .cassettes import Provenance, assert_all_played, make_vcr, use_cassette
from .matchers import caller, caller_of
from .modes import DUMMY_API_KEYS, LlmMode, ModelEndpoint, endpoint_for

if TYPE_CHECKING:
    from ..runner import RunOptions
    from ..scenario.models import Scenario

MATCH_ON = ("method_ci", "scheme", "host", "port", "path", "query", "rlm_caller")


@dataclass
class LlmSession:
    endpoint: ModelEndpoint
    mode_label: str
    scenario: str
    rerecord: str
    misses: list[Any] = field(default_factory=list)
    _sub_lm: Any = None

    async def sub_lm(self, prompt: str) -> str:
        return await self._sub_lm(prompt)

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
async def llm_session(scenario: "Scenario", options: "RunOptions", *, rerecord: str) -> AsyncIterator[LlmSession]:
    from reference_agent.backends.sublm import sublm_from_genai as genai_sub_lm

    mode = options.llm_mode
    with contextlib.ExitStack() as stack:
        base_url = None
        if mode is LlmMode.SCRIPTED:
            from .scripted_endpoint import ScriptedEndpoint

            base_url = stack.enter_context(ScriptedEndpoint(scenario.script)).base_url
        endpoint = endpoint_for(mode, model=options.model, scripted_base_url=base_url)
        session = LlmSession(endpoint=endpoint, mode_label=mode.value, scenario=scenario.name, rerecord=rerecord)
        cassette = None
        if mode is LlmMode.REPLAY or options.record:
            cassette = stack.enter_context(_cassette(scenario.name, options, endpoint, session))
        if mode is LlmMode.REPLAY:
            from .network_guard import NetworkGuard

            stack.enter_context(NetworkGuard(record_hint=f"re-record with: {rerecord}"))
        client = endpoint.genai_client(http_options=types.HttpOptions(retry_options=_sub_lm_retries()))
        session._sub_lm = genai_sub_lm(client, options.model)
        yield session
        if cassette is not None and mode is LlmMode.REPLAY and not session.misses:
            assert_all_played(cassette, scenario=scenario.name, rerecord_command=rerecord)


def _sub_lm_retries() -> types.HttpRetryOptions:
    from ..runner import RETRY_OPTIONS

    return RETRY_OPTIONS


@contextlib.contextmanager
def _cassette(name: str, options: "RunOptions", endpoint: ModelEndpoint, session: LlmSession):
    path = options.cassette_dir / f"{name}.yaml"
    if options.llm_mode is LlmMode.REPLAY and not path.exists():
        raise CassetteError(
            f"Scenario {name!r}: cassette {path} does not exist, and replay never records. Record it with: "
            f"{session.rerecord}"
        )
    provenance = Provenance(recorded_against="live" if options.llm_mode is LlmMode.LIVE else "scripted",
                            model=options.model)
    secrets = [*options.secrets, *(k for k in [endpoint.api_key] if k not in DUMMY_API_KEYS)]
    recorder = make_vcr(cassette_dir=options.cassette_dir, record_mode="none" if options.llm_mode is LlmMode.REPLAY
                        else "all", provenance=provenance, secrets=secrets)
    recorder.register_matcher("rlm_caller", caller)
    recorder.match_on = MATCH_ON
    with use_cassette(recorder, name) as cassette:
        _spy_on_misses(cassette, session)
        yield cassette


def _spy_on_misses(cassette: Any, session: LlmSession) -> None:
    """Remember every request replay could not answer (vcrpy then raises inside the HTTP client)."""
    original = cassette.can_play_response_for
    played = Counter()

    def can_play(request: Any) -> bool:
        ok = original(request)
        who = caller_of(request)
        if ok:
            played[who] += 1
        elif cassette.write_protected:
            session.misses.append((request, played[who]))
        return ok

    cassette.can_play_response_for = can_play
