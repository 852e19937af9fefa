"""Building blocks for driving the reference App offline: scripted models and a local stack.

Used by the tests, the ``rlm-agent demo`` command and the harness; nothing here
touches the network.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from google.adk.runners import Runner

from .app import build_app
from .backends.jobs import SubLmAnswer
from .config import AgentSettings
from .models.scripted import Reply, ScriptedLlm
from .wiring import RuntimeServices, build_local_services
from .sessions.delta_session_service import DeltaSessionService
from .storage.duckdb_engine import DuckDBEngine


@dataclass
class ScriptedSubLm:
    """Answers Job_B's llm_query prompts in order; records when each call started and ended."""

    answers: Sequence[str] = ()
    latency_s: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, prompt: str) -> str:
        index = len(self.calls)
        record: dict[str, Any] = {"prompt": prompt, "start": asyncio.get_running_loop().time()}
        self.calls.append(record)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        record["end"] = asyncio.get_running_loop().time()
        if index >= len(self.answers):
            raise RuntimeError(f"sub-LM script has {len(self.answers)} answers; call #{index + 1} has none")
        answer = self.answers[index]
        # Words stand in for tokens here, as in the scripted endpoint's usage metadata.
        return SubLmAnswer(answer, tokens=len(prompt.split()) + len(answer.split()))


@dataclass
class ScriptedTokenCounter:
    """Counts whitespace-separated words, as the scripted endpoint's countTokens does; keeps every text counted."""

    texts: list[str] = field(default_factory=list)

    async def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


@dataclass
class LocalStack:
    """The reference App wired to a scripted model, DuckDB and a local volume under one folder."""

    services: RuntimeServices
    session_service: DeltaSessionService
    runner: Runner
    llm: ScriptedLlm
    sub_lm: ScriptedSubLm
    token_counter: ScriptedTokenCounter


def build_local_stack(
    home: Path,
    *,
    script: dict[str, Sequence[Reply]],
    sub_lm_answers: Sequence[str] = (),
    sub_lm_latency_s: float = 0.0,
    context: Any = None,
    settings: AgentSettings | None = None,
) -> LocalStack:
    settings = settings or AgentSettings(home=home)
    engine = DuckDBEngine(settings.database_path)
    sub_lm = ScriptedSubLm(answers=list(sub_lm_answers), latency_s=sub_lm_latency_s)
    token_counter = ScriptedTokenCounter()
    services = build_local_services(settings, sub_lm=sub_lm, engine=engine, count_tokens=token_counter)
    if context is not None:
        services.put_context(context)
    llm = ScriptedLlm.from_script(script)
    session_service = DeltaSessionService(engine)
    runner = Runner(app=build_app(services, model=llm), session_service=session_service)
    return LocalStack(services, session_service, runner, llm, sub_lm, token_counter)
