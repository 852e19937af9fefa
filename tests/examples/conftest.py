"""Run the example agent with ADK's InMemoryRunner, a FakeLlm and a fake Gemini for llm_query."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event
from google.adk.plugins import BasePlugin
from google.adk.runners import InMemoryRunner
from google.genai import types

from tests.examples.fakes import FakeGemini, FakeLlm, fake_gemini


class LiveStateProbe(BasePlugin):
    """Keeps a copy of the live session state at the end of every invocation."""

    def __init__(self) -> None:
        super().__init__(name="live_state_probe")
        self.states: list[dict[str, Any]] = []

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self.states.append(copy.deepcopy(dict(invocation_context.session.state)))


@dataclass
class Run:
    runner: InMemoryRunner
    llm: FakeLlm
    probe: LiveStateProbe
    user_id: str
    session_id: str
    turns: list[list[Event]] = field(default_factory=list)

    @property
    def events(self) -> list[Event]:
        return [event for turn in self.turns for event in turn]

    async def stored_session(self) -> Any:
        return await self.runner.session_service.get_session(
            app_name=self.runner.app_name, user_id=self.user_id, session_id=self.session_id)

    async def artifact_text(self, filename: str) -> str:
        part = await self.runner.artifact_service.load_artifact(
            app_name=self.runner.app_name, user_id=self.user_id, session_id=self.session_id, filename=filename)
        assert part is not None and part.inline_data is not None
        return part.inline_data.data.decode("utf-8")

    def deltas_of(self, author: str) -> list[dict[str, Any]]:
        return [dict(e.actions.state_delta) for e in self.events if e.author == author]


async def run_agent(build: Callable[..., BaseAgent], *, app_name: str, script: dict[str, Sequence[str]],
                    turns: Sequence[str], context: Any = None, **build_kwargs: Any) -> Run:
    llm = FakeLlm.scripted(script)
    probe = LiveStateProbe()
    app = App(name=app_name, root_agent=build(model=llm, **build_kwargs), plugins=[probe])
    runner = InMemoryRunner(app=app)
    state = {} if context is None else {"context": context}
    session = await runner.session_service.create_session(app_name=app_name, user_id="u1", state=state)
    run = Run(runner=runner, llm=llm, probe=probe, user_id="u1", session_id=session.id)
    try:
        for text in turns:
            message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
            run.turns.append([e async for e in runner.run_async(user_id="u1", session_id=session.id,
                                                                 new_message=message)])
    finally:
        for agent in walk_agents(app.root_agent):
            pool = getattr(agent, "_pool", None)
            if pool is not None:
                pool.close()
    assert not llm.unserved(), f"scripted replies never requested: {llm.unserved()}"
    return run


def walk_agents(agent: BaseAgent) -> Iterator[BaseAgent]:
    yield agent
    for sub in agent.sub_agents:
        yield from walk_agents(sub)


@pytest.fixture(autouse=True)
def no_real_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real model: no key of the host's, and llm_query aimed at a closed local port."""
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "RLM_SUBLM_MODEL", "RLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")


@pytest.fixture
def sublm(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """Start a fake Gemini for llm_query and point the environment at it: ``fake = sublm(answer)``."""

    def start(answer: Callable[[str], str] = lambda prompt: "ok", *, delay: float = 0.0):
        manager = fake_gemini(answer, delay=delay)
        fake: FakeGemini = manager.__enter__()
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.base_url)
        monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
        monkeypatch.setenv("RLM_SUBLM_MODEL", "fake-sublm")
        started.append(manager)
        return fake

    started: list[Any] = []
    yield start
    for manager in started:
        manager.__exit__(None, None, None)


def repl(code: str) -> str:
    """A code_generator answer holding one ```repl``` block."""
    return f"Let me look.\n```repl\n{code}\n```"
