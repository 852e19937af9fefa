"""Scoped memory through the real App: user: history across sessions, app: snippets across users, the budget."""

from __future__ import annotations

from dataclasses import replace

from reference_agent import state_contract as keys
from reference_agent.config import AgentSettings
from reference_agent.models.scripted import Reply
from reference_agent.run import run_conversation

EXIT = Reply(call="exit_loop")


def delegate(code: str) -> Reply:
    return Reply(call="delegate_code_results", args={"code": code, "instruction": "Report it."})


async def state_of(stack, user: str, session: str) -> dict:
    stored = await stack.session_service.get_session(app_name=stack.runner.app_name, user_id=user, session_id=session)
    return dict(stored.state)


async def test_history_is_folded_by_an_event_and_seen_in_the_users_next_session(make_stack) -> None:
    stack = make_stack({
        keys.ANALYST: [delegate("print(6 * 7)"), Reply(text="It is 42.", call="exit_loop"), EXIT, EXIT],
        keys.RESULTS_PROCESSOR: [Reply(text="It printed 42.")],
    })
    await run_conversation(stack.runner, user_id="u1", session_id="a", message="What is six times seven?")
    first = await state_of(stack, "u1", "a")
    [entry] = first[keys.USER_HISTORY]
    [artifact] = stack.services.registry.list_for_session(stack.runner.app_name, "u1", "a")
    assert entry == {"session": "a", "question": "What is six times seven?", "termination": "exit_loop",
                     "answer": "It is 42.", "artifacts": [{"id": artifact.artifact_id, "status": "success"}]}
    assert not any(k.startswith("temp:") for k in first)
    stored = await stack.session_service.get_session(app_name=stack.runner.app_name, user_id="u1", session_id="a")
    writers = [e for e in stored.events if keys.USER_HISTORY in (e.actions.state_delta or {})]
    assert [e.author for e in writers] == [keys.RUN_CONVERSATION]

    await run_conversation(stack.runner, user_id="u1", session_id="b", message="Anything new?")
    prompt = stack.llm.requests_of(keys.ANALYST)[2].system_instruction
    assert "What is six times seven?" in prompt and "It is 42." in prompt and artifact.artifact_id in prompt
    second = await state_of(stack, "u1", "b")
    assert [e["session"] for e in second[keys.USER_HISTORY]] == ["a", "b"]

    await run_conversation(stack.runner, user_id="u2", session_id="c", message="Hello?")
    other = stack.llm.requests_of(keys.ANALYST)[3].system_instruction
    assert "six times seven" not in other and "Anything new?" not in other
    assert [e["session"] for e in (await state_of(stack, "u2", "c"))[keys.USER_HISTORY]] == ["c"]
    assert stack.token_counter.texts == []  # the default budget never needs a count


async def test_history_keeps_only_the_newest_entries(make_stack, tmp_path) -> None:
    settings = replace(AgentSettings(home=tmp_path, executor_timeout_s=10), history_max_entries=2)
    stack = make_stack({keys.ANALYST: [EXIT] * 4}, settings=settings)
    for n in range(4):
        await run_conversation(stack.runner, user_id="u1", session_id=f"s{n}", message=f"question {n}")
    state = await state_of(stack, "u1", "s3")
    assert [e["question"] for e in state[keys.USER_HISTORY]] == ["question 2", "question 3"]


async def test_saved_snippet_is_app_wide(make_stack) -> None:
    save = Reply(call="save_snippet", args={"name": "answer", "code": "print(42)", "description": "Prints 42."})
    stack = make_stack({keys.ANALYST: [save, EXIT, EXIT]})
    await run_conversation(stack.runner, user_id="u1", session_id="a", message="Keep a helper.")
    await run_conversation(stack.runner, user_id="u2", session_id="b", message="Which helpers exist?")
    state = await state_of(stack, "u2", "b")
    assert state[keys.SNIPPETS] == {"answer": {"code": "print(42)", "description": "Prints 42."}}
    prompt = stack.llm.requests_of(keys.ANALYST)[2].system_instruction
    assert "### answer: Prints 42." in prompt and "print(42)" in prompt


async def test_snippets_are_bounded(make_stack, tmp_path) -> None:
    settings = replace(AgentSettings(home=tmp_path, executor_timeout_s=10), max_snippets=2, snippet_max_chars=20)
    saves = [Reply(call="save_snippet", args={"name": f"s{n}", "code": f"print({n})", "description": "d"})
             for n in range(3)]
    too_long = Reply(call="save_snippet", args={"name": "big", "code": "x = 1\n" * 10, "description": "d"})
    stack = make_stack({keys.ANALYST: [*saves, too_long, EXIT]}, settings=settings)
    await run_conversation(stack.runner, user_id="u1", session_id="a", message="Keep helpers.")
    state = await state_of(stack, "u1", "a")
    assert list(state[keys.SNIPPETS]) == ["s1", "s2"]


async def test_small_budget_counts_and_cuts_the_history(make_stack, tmp_path) -> None:
    settings = replace(AgentSettings(home=tmp_path, executor_timeout_s=10), context_budget_tokens=300)
    stack = make_stack({keys.ANALYST: [EXIT] * 6}, settings=settings)
    for n in range(6):
        await run_conversation(stack.runner, user_id="u1", session_id=f"s{n}",
                               message=f"Which number comes after {n} in the sequence of whole numbers?")
    last = stack.llm.requests_of(keys.ANALYST)[-1].system_instruction
    assert stack.token_counter.texts  # counted: the prompt is longer than 300 characters
    assert "left out to fit the context budget" in last
    assert "after 4 in the sequence" in last and "after 0 in the sequence" not in last
