"""A scripted model for tests and the offline demo: a ``BaseLlm`` that answers from a script.

Each agent's calls are answered in order from that agent's list. The agent is
identified the way ADK itself names it in the request: the identity line
``You are an agent. Your internal name is "NAME".`` in the system instruction.
Every request is kept in ``requests`` so tests can read the exact prompts sent.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, AsyncGenerator, Mapping, Sequence

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import PrivateAttr

_IDENTITY = re.compile(r'Your internal name is "([^"]+)"')


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, a function call, or both."""

    text: str | None = None
    call: str | None = None
    args: Mapping[str, Any] | None = None

    def to_content(self) -> types.Content:
        parts: list[types.Part] = []
        if self.text:
            parts.append(types.Part.from_text(text=self.text))
        if self.call:
            parts.append(types.Part.from_function_call(name=self.call, args=dict(self.args or {})))
        return types.Content(role="model", parts=parts)


@dataclass(frozen=True)
class RecordedRequest:
    agent: str
    index: int
    system_instruction: str
    contents_text: str


def agent_name_of(request: LlmRequest) -> str:
    """The ADK agent name a request comes from, read from its identity instruction."""
    system = request.config.system_instruction if request.config else None
    text = system if isinstance(system, str) else content_text(system)
    match = _IDENTITY.search(text or "")
    return match.group(1) if match else "unknown"


def content_text(content: Any) -> str:
    """The text parts of a Content (or a plain string), joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = getattr(content, "parts", None) or []
    return "\n".join(p.text for p in parts if getattr(p, "text", None))


class ScriptedLlm(BaseLlm):
    """Answers each agent's n-th request with that agent's n-th scripted ``Reply``."""

    model: str = "scripted"
    _script: dict[str, list[Reply]] = PrivateAttr(default_factory=dict)
    _served: dict[str, int] = PrivateAttr(default_factory=lambda: defaultdict(int))
    _requests: list[RecordedRequest] = PrivateAttr(default_factory=list)

    @classmethod
    def from_script(cls, script: Mapping[str, Sequence[Reply]]) -> "ScriptedLlm":
        llm = cls()
        llm._script = {agent: list(replies) for agent, replies in script.items()}
        return llm

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self._requests)

    def requests_of(self, agent: str) -> list[RecordedRequest]:
        return [r for r in self._requests if r.agent == agent]

    def unserved(self) -> dict[str, int]:
        """Replies left over per agent; a finished scenario should leave none."""
        return {a: len(r) - self._served[a] for a, r in self._script.items() if len(r) > self._served[a]}

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        agent = agent_name_of(llm_request)
        index = self._served[agent]
        system = llm_request.config.system_instruction if llm_request.config else None
        self._requests.append(
            RecordedRequest(
                agent=agent,
                index=index,
                system_instruction=system if isinstance(system, str) else content_text(system),
                contents_text="\n".join(content_text(c) for c in llm_request.contents),
            )
        )
        replies = self._script.get(agent, [])
        if index >= len(replies):
            raise RuntimeError(
                f"ScriptedLlm: agent {agent!r} made request #{index + 1} but its script has only "
                f"{len(replies)} replies; add a reply for it to the script"
            )
        self._served[agent] = index + 1
        prompt_words = len(self._requests[-1].system_instruction.split()) + len(self._requests[-1].contents_text.split())
        answer_words = len((replies[index].text or "").split()) + (1 if replies[index].call else 0)
        # Usage metadata as a real model reports it (word counts stand in for tokens); ADK's telemetry wants it.
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt_words, candidates_token_count=answer_words,
            total_token_count=prompt_words + answer_words,
        )
        yield LlmResponse(content=replies[index].to_content(), usage_metadata=usage, turn_complete=True)
