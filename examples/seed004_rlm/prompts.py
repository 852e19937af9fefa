"""Instructions as functions (InstructionProviders): they hold code, so they must not be templated."""

from __future__ import annotations

import json
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext

from . import keys

RLM_SYSTEM_PROMPT = """You are tasked with answering a query with associated context. You can access, transform, and
analyze this context interactively in a REPL environment that can recursively query sub-LLMs, which you are
strongly encouraged to use as much as possible. You will be queried iteratively until you provide a final answer.

The REPL environment is initialized with:
1. A `context` variable that contains extremely important information about your query.
2. A `llm_query(prompt)` function that queries an LLM (that can handle around 500K chars) and returns its answer.
3. A `llm_query_batched(prompts)` function that sends a list of prompts concurrently and returns the answers in
   the same order.
4. `print()` to see the output of your code; the output you see is truncated, so print what matters.
5. `FINAL(answer)` to give your final answer, or `FINAL_VAR(name)` to give the value of a REPL variable.

Variables persist between iterations. Write the code to run next in ONE ```repl``` block, for example:
```repl
chunks = [context[i:i + 10000] for i in range(0, len(context), 10000)]
answers = llm_query_batched([f"Summarize: {chunk}" for chunk in chunks])
print(answers)
```
Call FINAL(...) only once you know the answer, from inside a ```repl``` block."""


def _history_text(history: list[dict[str, Any]]) -> str:
    if not history:
        return "(No previous iterations in this turn.)"
    lines = []
    for entry in history:
        lines.append(f"--- Iteration {entry.get('iteration')} (code: {entry.get('code_artifact')}) ---")
        lines.append("stdout:\n" + (entry.get("stdout") or "(nothing printed)"))
        if entry.get("error"):
            lines.append("error:\n" + entry["error"])
    return "\n".join(lines)


def code_generator_instruction(ctx: ReadonlyContext) -> str:
    state = ctx.state
    history = state.get(keys.ITERATION_HISTORY) or []
    sections = [
        RLM_SYSTEM_PROMPT,
        "## Context\n" + (state.get(keys.CONTEXT_DESCRIPTION) or "(No context loaded.)"),
        "## Iteration history\n" + _history_text(history),
    ]
    if history:
        last = history[-1]
        result = state.get(keys.EXECUTION_RESULT) or "(nothing printed)"
        error = f"\nError: {last['error']}" if last.get("error") else ""
        sections.append(f"## Last execution result (iteration {last.get('iteration')})\n{result}{error}")
    elif state.get(keys.EXECUTION_RESULT) is not None:  # a new turn: the durable result of the last one still shows
        sections.append("## Last execution result (previous turn)\n" + (state.get(keys.EXECUTION_RESULT)
                                                                        or "(nothing printed)"))
    sections.append("Write the next ```repl``` block for the user's query.")
    return "\n\n".join(sections)


def result_formatter_instruction(ctx: ReadonlyContext) -> str:
    state = ctx.state
    answer = state.get(keys.FINAL_ANSWER)
    if answer is not None:
        found = f"The REPL produced this final answer:\n{answer}"
    else:
        history = json.dumps(state.get(keys.ITERATION_HISTORY) or [], ensure_ascii=False)[-4000:]
        found = (f"The REPL stopped without a final answer (status: {state.get(keys.STATUS)}). "
                 f"Its iterations:\n{history}")
    return ("You present the result of an analysis to the user: answer their query clearly and briefly, "
            "using only what follows; say so when there is no answer.\n\n" + found)
