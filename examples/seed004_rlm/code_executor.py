"""code_executor: runs the generated ```repl``` block(s) in the session's REPL worker.

Each execution saves the code as an artifact ``code_<12 hex>.py`` and yields ONE event whose
state delta holds only: the stdout preview (``execution_result``), the history with this
execution appended (``iteration_history``), the turn's execution count (``iteration``), the
artifact's status (``artifact:<id>: "executed"``) and, when the code called FINAL, ``final_answer``.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.genai import types
from pydantic import PrivateAttr

from . import keys
from .repl import ExecutionOutcome, ReplPool

_REPL_BLOCK = re.compile(r"```repl[ \t]*\n(.*?)```", re.DOTALL)
NO_CODE = "no ```repl``` block in the generated answer: write the code in a ```repl``` block"


def extract_code_blocks(text: str) -> list[str]:
    """The bodies of the ```repl``` blocks of a model answer, in order."""
    return [block for block in _REPL_BLOCK.findall(text or "") if block.strip()]


def preview(text: str, limit: int, total: int | None = None) -> str:
    """``text`` itself when it fits in ``limit`` characters, else its head and tail around a cut marker.

    ``total`` is the length of the output ``text`` was captured from, when the capture kept only its
    head: then the preview is the first ``limit`` characters and the marker ends it.
    """
    total = len(text) if total is None else max(total, len(text))
    if total <= limit:
        return text
    marker = f"\n... [{total - limit} characters omitted] ...\n"
    if total > len(text):
        return text[:limit] + marker
    head = limit // 2
    return text[:head] + marker + text[len(text) - (limit - head):]


def new_artifact_id() -> str:
    return f"code_{uuid.uuid4().hex[:12]}.py"


class CodeExecutor(BaseAgent):
    """Executes ``generated_code`` and records one bounded result event per execution."""

    timeout_s: float = 30.0
    preview_chars: int = 2000
    stdout_cap: int = 100_000
    _pool: ReplPool | None = PrivateAttr(default=None)

    @property
    def pool(self) -> ReplPool:
        if self._pool is None:
            self._pool = ReplPool(timeout_s=self.timeout_s, stdout_cap=self.stdout_cap)
        return self._pool

    async def _save_code(self, ctx: InvocationContext, artifact_id: str, code: str) -> dict[str, int]:
        if ctx.artifact_service is None:  # a Runner built without one: run anyway, keep no copy
            return {}
        version = await ctx.artifact_service.save_artifact(
            app_name=ctx.app_name, user_id=ctx.user_id, session_id=ctx.session.id, filename=artifact_id,
            artifact=types.Part.from_bytes(data=code.encode("utf-8"), mime_type="text/x-python"),
        )
        return {artifact_id: version}

    def _has_fresh_code(self, ctx: InvocationContext) -> bool:
        """Whether ``generated_code`` was written in this invocation since this executor last ran: an answer
        that wrote nothing (an empty model answer) must not run the previous code again (stale glue)."""
        for event in reversed(ctx.session.events):
            if event.invocation_id != ctx.invocation_id:
                return False
            delta = event.actions.state_delta if event.actions else {}
            if keys.GENERATED_CODE in delta:
                return True
            if event.author == self.name and keys.ITERATION in delta:
                return False
        return False

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        if not self._has_fresh_code(ctx):
            return
        state = ctx.session.state
        blocks = extract_code_blocks(state.get(keys.GENERATED_CODE) or "")
        artifact_id = new_artifact_id()
        code = "\n\n".join(blocks)
        artifact_delta = await self._save_code(ctx, artifact_id, code)
        if blocks:
            session_key = f"{ctx.app_name}/{ctx.user_id}/{ctx.session.id}"
            outcome = await self.pool.run(session_key, blocks, state.get(keys.CONTEXT))
        else:
            outcome = ExecutionOutcome("", 0, "", NO_CODE, None)
        iteration = int(state.get(keys.ITERATION) or 0) + 1
        stdout = preview(outcome.stdout, self.preview_chars, outcome.stdout_chars)
        entry: dict[str, Any] = {
            "iteration": iteration,
            "code_artifact": artifact_id,
            "stdout": stdout,
            "error": preview(outcome.error, self.preview_chars) if outcome.error else None,
        }
        if outcome.fatal:
            entry["fatal"] = True
        delta: dict[str, Any] = {
            keys.EXECUTION_RESULT: stdout,
            keys.ITERATION_HISTORY: [*(state.get(keys.ITERATION_HISTORY) or []), entry],
            keys.ITERATION: iteration,
            keys.artifact_key(artifact_id): keys.EXECUTED,
        }
        if outcome.final_answer is not None:
            delta[keys.FINAL_ANSWER] = outcome.final_answer
        yield Event(
            invocation_id=ctx.invocation_id, author=self.name, branch=ctx.branch,
            actions=EventActions(state_delta=delta, artifact_delta=artifact_delta),
        )
