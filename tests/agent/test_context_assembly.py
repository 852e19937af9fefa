"""The analyst's prompt under a token budget: priorities, the cut, the summary kept, counting only when needed."""

from __future__ import annotations

import pytest

from reference_agent import history
from reference_agent.context_assembly import Snippet, assemble, render, snippets_from_state
from reference_agent.testing import ScriptedTokenCounter

INSTRUCTION = "You are a data analyst. " * 10  # 50 words
SUMMARY = "\n## Results of your last delegation\nThe total is 200.\n"


def entry(n: int) -> dict:
    return history.history_entry(session_id=f"s{n}", question=f"question number {n}?", termination="exit_loop",
                                 answer=f"answer number {n}.", turn_log=[])


HISTORY = [entry(n) for n in range(1, 6)]  # oldest first
SNIPPETS = [Snippet("old_helper", "print('old')", "the older one"), Snippet("new_helper", "print('new')", "newer")]


async def build(budget: int, counter: ScriptedTokenCounter | None, *, history_entries=HISTORY, snippets=SNIPPETS):
    return await assemble(instruction=INSTRUCTION, summary=SUMMARY, history=history_entries, snippets=snippets,
                          budget=budget, count=counter)


def words(text: str) -> int:
    return len(text.split())


async def test_everything_within_the_character_bound_is_never_counted() -> None:
    counter = ScriptedTokenCounter()
    result = await build(10_000, counter)
    assert counter.texts == [] and result.counts == 0 and result.tokens is None
    assert result.history_shown == 5 and result.snippets_shown == 2
    assert result.within_budget is True
    for n in range(1, 6):
        assert f"question number {n}?" in result.text
    assert "old_helper" in result.text and "new_helper" in result.text


async def test_priority_order_in_the_prompt() -> None:
    result = await build(10_000, ScriptedTokenCounter())
    text = result.text
    assert text.index("You are a data analyst") < text.index("The total is 200.") \
        < text.index("question number 1?") < text.index("question number 5?") < text.index("old_helper") \
        < text.index("new_helper")


async def test_cut_drops_the_oldest_history_first_and_keeps_the_summary() -> None:
    counter = ScriptedTokenCounter()
    everything = await build(10_000, None)
    mandatory = render(INSTRUCTION, SUMMARY, [], history_total=5, snippets=[], snippets_total=2)
    budget = words(mandatory) + 2 * 20  # room for about two entries, not five
    result = await build(budget, counter)

    assert result.tokens is not None and result.tokens <= budget < words(everything.text)
    assert result.tokens == words(result.text)  # the reported size is the count of exactly this text
    assert "The total is 200." in result.text  # the newest summary is always kept
    assert 0 < result.history_shown < 5
    shown = [n for n in range(1, 6) if f"question number {n}?" in result.text]
    assert shown == list(range(6 - result.history_shown, 6))  # a run of the newest entries
    assert f"({5 - result.history_shown} older turn(s) left out" in result.text
    # every text it counted was longer than the budget in characters
    assert counter.texts and all(len(t) > budget for t in counter.texts)


async def test_snippets_come_last_and_the_newest_first() -> None:
    newest_only = render(INSTRUCTION, SUMMARY, HISTORY, history_total=5, snippets=SNIPPETS[1:], snippets_total=2)
    budget = words(newest_only)  # all history and one snippet, not two
    result = await build(budget, ScriptedTokenCounter())
    assert result.history_shown == 5
    assert result.snippets_shown == 1 and "new_helper" in result.text and "old_helper" not in result.text
    assert "(1 more not shown)" in result.text


async def test_instruction_and_summary_are_sent_even_over_budget() -> None:
    counter = ScriptedTokenCounter()
    result = await build(20, counter)
    assert result.history_shown == 0 and result.snippets_shown == 0
    assert "The total is 200." in result.text and result.within_budget is False
    assert len(counter.texts) == 1  # the mandatory part was counted once; nothing else was tried


async def test_without_a_counter_only_the_character_bound_decides() -> None:
    mandatory = render(INSTRUCTION, SUMMARY, [], history_total=5, snippets=[], snippets_total=2)
    with_one = render(INSTRUCTION, SUMMARY, HISTORY[-1:], history_total=5, snippets=[], snippets_total=2)
    result = await build(len(with_one), None)
    assert result.history_shown == 1 and result.tokens is None and result.within_budget is True
    over = await build(len(mandatory) - 1, None)
    assert over.history_shown == 0 and over.within_budget is None  # unknown: nothing could count it


@pytest.mark.parametrize("budget", [1, 60, 90, 120, 200, 10_000])
async def test_count_calls_are_few(budget: int) -> None:
    counter = ScriptedTokenCounter()
    result = await build(budget, counter)
    # at most: the mandatory part, each shown entry, the first entry that did not fit, each snippet
    assert result.counts == len(counter.texts) <= 1 + result.history_shown + 1 + len(SNIPPETS)


def test_history_fold_is_bounded_oldest_out() -> None:
    folded: list = []
    for n in range(1, 8):
        folded = history.fold_turn(folded, entry(n), max_entries=3)
    assert [e["session"] for e in folded] == ["s5", "s6", "s7"]


def test_history_entry_is_cut_and_carries_the_turn_log_artifacts() -> None:
    log = history.logged({}, history.delegated("a1", 1))
    log = history.logged({"temp:rlm:turn_log": log}, history.executed("a1", "success"))
    log = history.logged({"temp:rlm:turn_log": log}, history.delegated("a2", 2))
    made = history.history_entry(session_id="s", question="q" * 1000, termination="exit_loop", answer="a" * 1000,
                                 turn_log=log)
    assert len(made["question"]) == history.QUESTION_CHARS and made["question"].endswith("…")
    assert len(made["answer"]) == history.ANSWER_CHARS
    assert made["artifacts"] == [{"id": "a1", "status": "success"}, {"id": "a2", "status": "pending"}]


def test_snippets_from_state_keeps_save_order_and_skips_junk() -> None:
    value = {"a": {"code": "1", "description": "one"}, "junk": 3, "b": {"code": "2"}}
    assert [s.name for s in snippets_from_state(value)] == ["a", "b"]
    assert snippets_from_state(None) == [] and snippets_from_state(["x"]) == []
