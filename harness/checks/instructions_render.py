"""Instructions render: no state placeholder left in a prompt, no templating crash."""

from __future__ import annotations

import re

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_request, show

NAME = "instructions_render"
PLACEHOLDER = re.compile(r"\{\+?[A-Za-z_][\w]*(?::[\w:]+)?\??\}")
TEMPLATING_CRASH = "Context variable not found"


@check(
    NAME,
    title="Instructions render completely",
    why="ADK templates a string instruction: {rlm:last_results_summary?} (a prefix other than app:/user:/temp:) "
        "is left in the prompt verbatim, silently, and a code example such as {row} crashes the run with "
        "'Context variable not found'. Use instruction providers for prompts with code or namespaced keys. Only "
        "agents whose instruction is a string template are judged: an instruction provider does no templating, "
        "so braces in what it returns (code examples) are not placeholders.",
    dod_item="design: the analyst must see the summary; {rlm:...?} templating does not work",
)
def instructions_render(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    if not trace.llm_requests and not trace.turns:
        return not_applicable(NAME, "The trace holds no model request and no turn.")
    templated = {a.name for a in trace.agents if a.instruction_kind == "string"}
    judged = [r for r in trace.llm_requests if r.agent in templated]
    evidence: list[str] = []
    for request in sorted(judged, key=lambda r: r.index):
        found = sorted(set(PLACEHOLDER.findall(request.system_instruction)))
        if found:
            evidence.append(f"{name_request(request)}: system_instruction of agent {request.agent} holds leftover "
                            f"placeholder(s) {', '.join(found)}")
    for turn in trace.turns:
        for field, text in (("run_error", turn.run_error), ("outcome.error", turn.outcome.error)):
            if text and TEMPLATING_CRASH in text:
                evidence.append(f"turn {turn.turn} (session {turn.session_id}): {field} {show(text, 160)} — a "
                                f"string instruction referenced a missing state key")
    if evidence:
        return failed(NAME, "Instruction templating left placeholders or crashed.", capped(evidence))
    skipped = len(trace.llm_requests) - len(judged)
    others = (f" ({skipped} request(s) of agents with an instruction provider or no instruction not judged: no "
              f"templating there)") if skipped else ""
    return passed(NAME, f"No leftover placeholder in {len(judged)} request(s) of agents with a string instruction"
                        f"{others}; no templating crash in {len(trace.turns)} turn(s).")
