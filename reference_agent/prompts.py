"""Instruction providers for the agents.

They are functions, not strings, on purpose: ADK templates a *string*
instruction, so ``{rlm:last_results_summary?}`` would be left verbatim (only
app:/user:/temp: prefixes are templated) and a code example such as
``{row}`` would crash the run with "Context variable not found". A provider's
text is used as is, and it reads the durable summary from state itself.

The analyst's prompt is assembled by ``context_assembly`` from the instruction,
the latest summary, the user's history (``user:rlm:history``) and the app's
saved snippets (``app:rlm:snippets``), cut to ``context_budget_tokens``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from google.adk.agents.readonly_context import ReadonlyContext

from . import state_contract as keys
from .context_assembly import assemble, render, snippets_from_state
from .wiring import RuntimeServices

_ANALYST_BASE = """\
You are a data analyst working in a Python REPL that runs on a separate executor (Job_B).
Solve the user's question by delegating Python code with the tool delegate_code_results(code, instruction).

In the code you may use:
- `context`: the data for this task (JSON: dicts, lists, numbers, strings);
- `llm_query(prompt)` -> str: ask a language model about a chunk of text;
- `llm_query_batched(prompts)` -> list[str]: many prompts answered concurrently;
- `FINAL(answer)`: give the final answer and end the task;
- `FINAL_VAR(name)`: give the value of a variable created in an EARLIER step as the final answer.
The REPL persists: variables (and imports) from earlier delegations are still there, so you may build a
result over several steps and answer with FINAL_VAR in a later one. Values that cannot be pickled (a
lambda, an open socket) are not kept; the output names them so you can rebuild them.
Print what you need to see: stdout is summarised for you after each run.
For example: `for row in context["rows"]: print(row["id"])`.

To keep code that will be useful again (to you or to other analysts of this app), save it with
save_snippet(name, code, description); saved snippets are listed below.
When the question is answered and no more code is needed, call exit_loop.
"""


def summary_section(ctx: ReadonlyContext) -> str:
    """The durable summary of the last execution, or a note that there is none yet."""
    iteration = ctx.state.get(keys.ITERATION)
    summary = ctx.state.get(keys.LAST_RESULTS_SUMMARY)
    if summary:
        artifact = ctx.state.get(keys.LAST_ARTIFACT_ID, "unknown")
        ok = ctx.state.get(keys.LAST_EXECUTION_SUCCESS)
        status = "succeeded" if ok else "failed" if ok is False else "unknown"
        return (f"\n## Results of your last delegation (iteration {iteration}, artifact {artifact}, run {status})\n"
                f"{summary}\n")
    return "\n## Results of your last delegation\n(none yet)\n"


def _history(ctx: ReadonlyContext) -> list:
    value = ctx.state.get(keys.USER_HISTORY)
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def analyst_instruction(ctx: ReadonlyContext) -> str:
    """The analyst's whole prompt with no budget: instruction, summary, all history, all snippets."""
    history = _history(ctx)
    snippets = snippets_from_state(ctx.state.get(keys.SNIPPETS))
    return render(_ANALYST_BASE, summary_section(ctx), history, history_total=len(history), snippets=snippets,
                  snippets_total=len(snippets))


def make_analyst_instruction(services: RuntimeServices) -> Callable[[ReadonlyContext], Awaitable[str]]:
    """The analyst's instruction provider: the prompt assembled within ``context_budget_tokens``."""

    async def analyst_instruction_within_budget(ctx: ReadonlyContext) -> str:
        assembled = await assemble(
            instruction=_ANALYST_BASE, summary=summary_section(ctx), history=_history(ctx),
            snippets=snippets_from_state(ctx.state.get(keys.SNIPPETS)),
            budget=services.settings.context_budget_tokens, count=services.count_tokens,
        )
        return assembled.text

    return analyst_instruction_within_budget


_PROCESSOR_BASE = """\
You summarise the output of Python code that was just executed for a data analyst.
Say what the output shows, quote the key numbers exactly, and report errors plainly
(exception type and message). If the output contains a final answer, state it.
Keep it under 200 words. Do not write code and do not call tools.
"""


def results_processor_instruction(ctx: ReadonlyContext) -> str:
    """The processor's prompt; the execution results arrive in the request from the injection plugin."""
    return _PROCESSOR_BASE
