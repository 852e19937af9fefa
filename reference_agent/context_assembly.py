"""The analyst's prompt, assembled from prioritised sections and cut to a token budget.

Priority, highest first:

1. the instruction — always;
2. the latest results summary — always (the newest summary is never dropped);
3. the user's history (``user:rlm:history``) — newest entries first; once one does not fit, it and every
   older one are left out (oldest out), and the prompt says how many were left out;
4. saved snippets (``app:rlm:snippets``) — newest first, each kept if it still fits.

The budget is in the model's tokens, counted by a ``TokenCounter`` (the model's countTokens endpoint):
never estimated. Counting is skipped whenever it cannot change the answer: a text of at most ``budget``
characters has at most ``budget`` tokens (every token is at least one character), so a prompt that short
fits without a count, and with the default budget no count is ever made. Every text that is longer is
counted before it is used, so the final prompt either fits by that character bound or by its own count.
Without a counter, only the character bound is used (conservative: optional sections are left out sooner).

If the instruction and the summary alone exceed the budget they are still sent (a budget too small for
them is a configuration error, which the result reports as ``within_budget=False``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .backends.tokens import TokenCounter
from .history import render_entry


@dataclass(frozen=True)
class AssembledContext:
    text: str
    budget: int
    tokens: int | None  # the count of ``text``; None when it was not counted (len(text) <= budget)
    history_shown: int
    history_total: int
    snippets_shown: int
    snippets_total: int
    counts: int  # countTokens calls made to assemble it

    @property
    def within_budget(self) -> bool | None:
        """True/False when known; None if the text is longer than the budget and there was no counter."""
        if len(self.text) <= self.budget:
            return True
        return None if self.tokens is None else self.tokens <= self.budget


@dataclass(frozen=True)
class Snippet:
    name: str
    code: str
    description: str


def snippets_from_state(value: Any) -> list[Snippet]:
    """``app:rlm:snippets`` (name -> {code, description}, in save order) as a list; malformed items skipped."""
    if not isinstance(value, Mapping):
        return []
    return [Snippet(str(name), str(item.get("code", "")), str(item.get("description", "")))
            for name, item in value.items() if isinstance(item, Mapping)]


def render(instruction: str, summary: str, history: Sequence[Mapping[str, Any]], *, history_total: int,
           snippets: Sequence[Snippet], snippets_total: int) -> str:
    """The prompt text with exactly these history entries (oldest first) and snippets."""
    parts = [instruction.rstrip("\n") + "\n", summary.rstrip("\n") + "\n"]
    if history_total:
        left_out = history_total - len(history)
        note = f" ({left_out} older turn(s) left out to fit the context budget)" if left_out else ""
        parts.append(f"\n## Your earlier questions (this user's previous turns, oldest first){note}\n")
        parts.extend(render_entry(entry) + "\n" for entry in history)
    if snippets:
        left_out = snippets_total - len(snippets)
        note = f" ({left_out} more not shown)" if left_out else ""
        parts.append(f"\n## Saved code snippets (shared by every user of this app){note}\n")
        for snippet in snippets:
            parts.append(f"### {snippet.name}: {snippet.description}\n```python\n{snippet.code.rstrip()}\n```\n")
    return "".join(parts)


class _Meter:
    """Decides whether a text fits, counting only when the character bound cannot decide."""

    def __init__(self, budget: int, count: TokenCounter | None) -> None:
        self.budget, self._count, self.calls = budget, count, 0

    async def measure(self, text: str) -> tuple[bool, int | None]:
        if len(text) <= self.budget:
            return True, None
        if self._count is None:
            return False, None
        self.calls += 1
        tokens = await self._count(text)
        return tokens <= self.budget, tokens


async def assemble(*, instruction: str, summary: str, history: Sequence[Mapping[str, Any]],
                   snippets: Sequence[Snippet], budget: int, count: TokenCounter | None) -> AssembledContext:
    """The prompt within ``budget`` tokens, by the priorities of this module's docstring."""
    history = list(history)
    snippets = list(snippets)
    full = render(instruction, summary, history, history_total=len(history), snippets=snippets,
                  snippets_total=len(snippets))
    if len(full) <= budget:  # everything fits by the character bound: no count needed
        return AssembledContext(full, budget, None, len(history), len(history), len(snippets), len(snippets), 0)

    meter = _Meter(budget, count)

    def candidate(shown: int, chosen: Sequence[Snippet]) -> str:
        return render(instruction, summary, history[len(history) - shown:], history_total=len(history),
                      snippets=chosen, snippets_total=len(snippets))

    shown, chosen = 0, []
    text = candidate(0, [])
    fits, tokens = await meter.measure(text)
    if fits:
        for n in range(1, len(history) + 1):  # newest first; the first that does not fit ends the history
            attempt = candidate(n, chosen)
            ok, counted = await meter.measure(attempt)
            if not ok:
                break
            shown, text, tokens = n, attempt, counted
        for snippet in reversed(snippets):  # newest first; each one that fits is kept
            trial = [snippet, *chosen]
            attempt = candidate(shown, trial)
            ok, counted = await meter.measure(attempt)
            if ok:
                chosen, text, tokens = trial, attempt, counted
    return AssembledContext(text, budget, tokens, shown, len(history), len(chosen), len(snippets), meter.calls)
