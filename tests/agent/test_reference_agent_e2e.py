"""The real App through ADK's Runner with a scripted model: the loop, the stage gate, the handoff."""

from __future__ import annotations

from reference_agent import state_contract as keys
from reference_agent.models.scripted import Reply
from reference_agent.run import run_conversation

USER, SESSION = "analyst_1", "s1"


def delegate(code: str, instruction: str = "Report the result.") -> Reply:
    return Reply(call="delegate_code_results", args={"code": code, "instruction": instruction})


EXIT = Reply(call="exit_loop")


async def persisted(stack):
    return await stack.session_service.get_session(
        app_name=stack.runner.app_name, user_id=USER, session_id=SESSION
    )


async def test_one_delegation_executes_summarises_and_exits(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [delegate("print(sum(r['amount'] for r in context['sales']))"), EXIT],
            keys.RESULTS_PROCESSOR: [Reply(text="The total is 200.")],
        },
        context={"sales": [{"amount": 120}, {"amount": 80}]},
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="Total sales?")

    assert outcome.termination == "exit_loop"
    assert outcome.delegations == 1
    session = await persisted(stack)
    assert session.state[keys.LAST_RESULTS_SUMMARY] == "The total is 200."
    assert session.state[keys.ITERATION] == 1
    assert session.state[keys.LAST_EXECUTION_SUCCESS] is True
    assert not [k for k in session.state if k.startswith("temp:")]
    # The processor's model saw the real stdout, injected into its request.
    processor_request = stack.llm.requests_of(keys.RESULTS_PROCESSOR)[0]
    assert "EXECUTION RESULTS" in processor_request.contents_text and "200" in processor_request.contents_text
    # The summary reached the analyst's next prompt (an instruction provider, not {rlm:...?} templating).
    second_analyst = stack.llm.requests_of(keys.ANALYST)[1]
    assert "The total is 200." in second_analyst.system_instruction
    assert "{rlm:" not in second_analyst.system_instruction
    [artifact] = stack.services.registry.list_for_session(stack.runner.app_name, USER, SESSION)
    assert artifact.status == "consumed"
    assert stack.llm.unserved() == {}


async def test_two_delegations_each_run_once(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [delegate("x = 2\nprint(x)"), delegate("print(3 * 7)"), EXIT],
            keys.RESULTS_PROCESSOR: [Reply(text="It printed 2."), Reply(text="It printed 21.")],
        }
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    assert outcome.delegations == 2
    session = await persisted(stack)
    assert session.state[keys.LAST_RESULTS_SUMMARY] == "It printed 21."
    builder_events = [e for e in session.events if e.author == keys.JOB_BUILDER]
    assert len(builder_events) == 2
    assert "It printed 2." in stack.llm.requests_of(keys.ANALYST)[1].system_instruction
    statuses = [a.status for a in stack.services.registry.list_for_session(stack.runner.app_name, USER, SESSION)]
    assert statuses == ["consumed", "consumed"]


async def test_iteration_without_delegation_reruns_nothing(make_stack):
    """Stale temp: glue from iteration 1 must not trigger job_builder or the processor in iteration 2."""
    stack = make_stack(
        {
            keys.ANALYST: [delegate("print('once')"), Reply(text="Thinking it over."), EXIT],
            keys.RESULTS_PROCESSOR: [Reply(text="It printed once.")],
        }
    )
    await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    session = await persisted(stack)
    assert [e.author for e in session.events].count(keys.JOB_BUILDER) == 1
    assert len(stack.llm.requests_of(keys.RESULTS_PROCESSOR)) == 1
    assert stack.llm.unserved() == {}


async def test_executor_error_is_seen_and_the_analyst_recovers(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [delegate("raise ValueError('bad column')"), delegate("print('fixed')"), EXIT],
            keys.RESULTS_PROCESSOR: [Reply(text="ValueError: bad column."), Reply(text="It printed fixed.")],
        }
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    assert outcome.termination == "exit_loop" and outcome.delegations == 2
    first_injection = stack.llm.requests_of(keys.RESULTS_PROCESSOR)[0].contents_text
    assert "ValueError" in first_injection and "bad column" in first_injection
    assert "ValueError: bad column." in stack.llm.requests_of(keys.ANALYST)[1].system_instruction
    session = await persisted(stack)
    assert session.state[keys.LAST_EXECUTION_SUCCESS] is True


async def test_variable_built_over_three_iterations_then_final_var(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [delegate("parts = ['a']\nprint(parts)"), delegate("parts.append('b')\nprint(parts)"),
                           delegate("parts.append('c')\njoined = ''.join(parts)\nFINAL_VAR('joined')")],
            keys.RESULTS_PROCESSOR: [Reply(text="['a']"), Reply(text="['a', 'b']"), Reply(text="Answer abc.")],
        }
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    assert outcome.termination == "final_answer" and outcome.final_answer == "abc"
    metrics = (await persisted(stack)).state[keys.METRICS]
    assert metrics["runs"] == 3 and metrics["statuses"] == {"success": 3}


async def test_sub_lm_token_budget_is_an_error_the_analyst_sees(make_stack, tmp_path):
    from reference_agent.config import AgentSettings

    stack = make_stack(
        {
            keys.ANALYST: [delegate("print(llm_query('one two three'))"), delegate("print(llm_query('again'))"), EXIT],
            keys.RESULTS_PROCESSOR: [Reply(text="It answered."), Reply(text="Budget exhausted.")],
        },
        sub_lm_answers=["four five six seven"],
        settings=AgentSettings(home=tmp_path, max_sublm_tokens_per_session=5),
    )
    await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    second = stack.llm.requests_of(keys.RESULTS_PROCESSOR)[1].contents_text
    assert "token budget exhausted" in second
    assert len(stack.sub_lm.calls) == 1  # the second call never reached the model
    assert (await persisted(stack)).state[keys.METRICS]["sublm_tokens"] == 7


async def test_final_var_answer_ends_the_loop(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [delegate("answer = 6 * 7\nFINAL_VAR('answer')")],
            keys.RESULTS_PROCESSOR: [Reply(text="The answer is 42.")],
        }
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="6 times 7?")

    assert outcome.termination == "final_answer"
    assert outcome.final_answer == "42"
    session = await persisted(stack)
    assert session.state[keys.FINAL_ANSWER] == "42"
    assert stack.llm.unserved() == {}


async def test_llm_query_batched_runs_concurrently(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [
                delegate("answers = llm_query_batched(['a', 'b', 'c', 'd'])\nprint(answers)\nFINAL(len(answers))")
            ],
            keys.RESULTS_PROCESSOR: [Reply(text="Four answers.")],
        },
        sub_lm_answers=["A", "B", "C", "D"],
        sub_lm_latency_s=0.4,
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")

    assert outcome.final_answer == "4"
    calls = stack.sub_lm.calls
    assert len(calls) == 4
    # Concurrency observed, not timed: every call started before the first one ended.
    assert max(c["start"] for c in calls) < min(c["end"] for c in calls)


async def test_second_turn_clears_stale_flags_by_appending_an_event(make_stack):
    stack = make_stack(
        {
            keys.ANALYST: [EXIT, EXIT],
        }
    )
    first = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="one")
    assert first.termination == "exit_loop"
    events_before = len((await persisted(stack)).events)
    second = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="two")
    assert second.termination == "exit_loop"
    session = await persisted(stack)
    cleanup = [e for e in session.events[events_before:] if e.author == keys.RUN_CONVERSATION]
    assert cleanup, "stale flags must be cleared by an appended event"
    assert keys.EXIT_REQUESTED in cleanup[0].actions.state_delta


async def test_max_iterations_without_an_answer(make_stack, tmp_path):
    from reference_agent.config import AgentSettings

    stack = make_stack(
        {keys.ANALYST: [Reply(text="hmm"), Reply(text="hmm"), Reply(text="Probably 42.")]},
        settings=AgentSettings(home=tmp_path, max_iterations=2),
    )
    outcome = await run_conversation(stack.runner, user_id=USER, session_id=SESSION, message="go")
    assert outcome.termination == "max_iterations"
    assert outcome.final_answer is None
    # One last "answer now" request, kept apart from a real final answer.
    assert outcome.forced_answer == "Probably 42."
    answer_now = stack.llm.requests_of(keys.ANALYST)[-1]
    assert "used every iteration" in answer_now.contents_text
    assert stack.llm.unserved() == {}
    assert (await persisted(stack)).state[keys.TERMINATION_REASON] == "max_iterations"
