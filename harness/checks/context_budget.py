"""(003-4) Each analyst prompt's assembled context stays within the scenario's token budget.

How it is measured, without trusting the target's own claim: the assembled context
is the analyst request's system instruction up to the identity line ADK appends
("You are an agent. Your internal name is ..."). A text of at most ``budget``
characters has at most ``budget`` tokens (each token is at least one character),
so such a context passes by its length alone. A longer one passes only if the
target counted exactly that text with the model's countTokens endpoint through
the harness's counter (``TargetEnvironment.count_tokens``; each call is in
``trace.token_counts`` and, on replay, in the cassette) and the count is within
the budget. A longer context that was never counted fails: nobody knows its size.
"""

from __future__ import annotations

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_request

NAME = "context_budget"
IDENTITY = "You are an agent. Your internal name is"


def assembled_context(system_instruction: str) -> str:
    """The part of a system instruction the agent's instruction provider assembled (ADK's identity line cut)."""
    head, _, _ = system_instruction.partition(IDENTITY)
    return head.strip()


@check(
    NAME,
    title="The analyst's context stays within its token budget",
    why="The analyst's prompt is assembled from the instruction, the latest summary, the user's history and saved "
        "snippets, prioritised and cut to a token budget. The budget is in the model's tokens, counted by the "
        "model (never len(text) // 4): every analyst request of a scenario that sets limits.context_budget_tokens "
        "must carry a context that is either no longer than the budget in characters or counted within it.",
    dod_item="003: context assembly under a token budget, with a real token count",
)
def context_budget(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    budget = ctx.scenario.limits.context_budget_tokens
    if budget is None:
        return not_applicable(NAME, "The scenario sets no limits.context_budget_tokens.")
    if reason := profile.unmapped("analyst"):
        return not_applicable(NAME, f"No analyst whose prompts to measure: {reason}.")
    requests = sorted(trace.requests_of(profile.analyst), key=lambda r: r.index)
    if not requests:
        return not_applicable(NAME, f"No {profile.analyst} request was made.")
    counted = {record.text.strip(): record.tokens for record in trace.token_counts}
    checked: list[str] = []
    problems: list[str] = []
    for request in requests:
        text = assembled_context(request.system_instruction)
        if len(text) <= budget:
            checked.append(f"{name_request(request)}: context of {len(text)} characters <= {budget} (no count needed)")
        elif text not in counted:
            problems.append(f"{name_request(request)}: context of {len(text)} characters, longer than the {budget}-token "
                            f"budget, and it was never counted (no countTokens call for this text): it may exceed "
                            f"the budget")
        elif counted[text] > budget:
            problems.append(f"{name_request(request)}: context counted {counted[text]} tokens > budget {budget}")
        else:
            checked.append(f"{name_request(request)}: context counted {counted[text]} tokens <= budget {budget}")
    if problems:
        return failed(NAME, f"{len(problems)} of {len(requests)} analyst request(s) are not shown to be within the "
                            f"{budget}-token budget.", capped(problems + checked))
    return passed(NAME, f"All {len(requests)} analyst request(s) stay within the {budget}-token budget "
                        f"({len(trace.token_counts)} countTokens call(s) in the run).", capped(checked))
