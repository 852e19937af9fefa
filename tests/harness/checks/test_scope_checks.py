"""The scoped-state checks (seed 003) on hand-built traces: pass, fail naming the culprit, or not applicable."""

from __future__ import annotations

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from tests.harness.checks.trace_builder import TraceBuilder, happy_trace, make_context
from harness.scenario.models import Scenario
from harness.trace.model import TokenCountRecord, Trace
from reference_agent import state_contract as keys

Q1 = "What were the north region's confidential sales?"
Q2 = "How many sales records does the data hold?"


def run(name: str, trace: Trace, **kwargs) -> CheckResult:
    [result] = run_checks(make_context(trace, **kwargs), only=[name])
    return result


def assert_status(result: CheckResult, status: Status, *fragments: str) -> None:
    assert result.status is status, (result.explanation, result.evidence)
    text = "\n".join(result.evidence) + "\n" + result.explanation
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"


def scenario_with(**limits) -> Scenario:
    return Scenario.model_validate({"name": "unit", "description": "A hand-built trace.", "limits": limits,
                                    "sessions": [{"id": "s1", "turns": [{"user": "go"}]}], "script": {}})


def fold(b: TraceBuilder, history: list[dict], *, author: str = keys.RUN_CONVERSATION) -> None:
    """What run_conversation does after the turn: one appended history event, then storage is read back."""
    b.trace.persisted.pop()
    b.event(author, delta={keys.USER_HISTORY: history}, invocation_id=f"history-{b.turn}")
    b.snapshot()


def entry(session: str, question: str) -> dict:
    return {"session": session, "question": question, "termination": "exit_loop", "answer": None, "artifacts": []}


def one_turn(b: TraceBuilder, question: str, *, session: str, user: str, prompt: str | None = None) -> None:
    b.start_turn(question, session_id=session, user_id=user)
    b.request(b.profile.analyst, system_instruction=prompt or "You are a data analyst.\n", response_calls=["exit_loop"])
    b.event(b.profile.analyst, function_calls=[b.profile.exit_tool])
    b.event(b.profile.analyst, function_responses=[b.profile.exit_tool], escalate=True,
            delta={keys.EXIT_REQUESTED: True, keys.TERMINATION_REASON: "exit_loop"})
    b.end_turn(fold_history=False)  # the tests fold (or not) themselves


# --- user_history_scoped -----------------------------------------------------------------------------


def two_users(*, second_prompt: str | None = None) -> Trace:
    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")
    fold(b, [entry("s1", Q1)])
    one_turn(b, Q2, session="s2", user="bob", prompt=second_prompt)
    fold(b, [entry("s2", Q2)])
    return b.build()


def test_user_history_scoped_passes_when_users_see_only_their_own() -> None:
    assert_status(run("user_history_scoped", two_users()), Status.PASS, "2 question(s)")


def test_user_history_scoped_fails_on_a_prompt_leak() -> None:
    trace = two_users(second_prompt=f"You are a data analyst.\n- [session s1] Q: {Q1}\n")
    assert_status(run("user_history_scoped", trace), Status.FAIL, "request #1", "of user bob",
                  "shows user alice's question")


def test_user_history_scoped_fails_on_history_in_app_state_or_another_users_row() -> None:
    trace = two_users()
    trace.persisted[-1].app_state["rlm:history"] = [entry("s1", Q1)]
    trace.persisted[-1].user_state["rlm:history"].append(entry("s1", Q1))
    assert_status(run("user_history_scoped", trace), Status.FAIL,
                  "app_state key 'rlm:history' (seen by every user) quotes user alice's question",
                  "user_state key 'rlm:history' (seen by user bob) quotes user alice's question")


def test_user_history_scoped_wants_the_users_own_history_in_a_later_session() -> None:
    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")
    fold(b, [entry("s1", Q1)])
    one_turn(b, Q2, session="s2", user="alice")
    assert_status(run("user_history_scoped", b.build()), Status.FAIL, "the user's history did not carry over")

    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")
    one_turn(b, Q2, session="s2", user="alice", prompt=f"Earlier: {Q1}")
    assert_status(run("user_history_scoped", b.build()), Status.PASS, "shows the user's question")
    # a budget may cut even the newest entry: then the carry-over is not demanded
    assert_status(run("user_history_scoped", b.build(), scenario=scenario_with(context_budget_tokens=10)),
                  Status.NOT_APPLICABLE)


def test_user_history_scoped_not_applicable_to_one_session() -> None:
    assert_status(run("user_history_scoped", happy_trace()), Status.NOT_APPLICABLE)


# --- history_folded_by_event -------------------------------------------------------------------------


def test_history_folded_by_event_passes_on_run_conversation_events() -> None:
    assert_status(run("history_folded_by_event", two_users()), Status.PASS,
                  "by event #", "author run_conversation", "persisted row seq")


def test_history_folded_by_event_fails_on_a_change_without_event() -> None:
    trace = two_users()
    trace.persisted[-1].user_state["rlm:history"] = [entry("s2", Q2), entry("x", "written around the service")]
    assert_status(run("history_folded_by_event", trace), Status.FAIL,
                  "persisted snapshot of session s2 after turn 1", "but the last event writing it")
    trace = two_users()
    for snapshot in trace.persisted:
        snapshot.user_state.pop("rlm:history", None)
    trace.events = [e for e in trace.events if keys.USER_HISTORY not in e.emitted_delta]
    trace.persisted[-1].user_state["rlm:history"] = [entry("s2", Q2)]
    assert_status(run("history_folded_by_event", trace), Status.FAIL, "with no appended event writing it")


def test_history_folded_by_event_fails_on_another_author() -> None:
    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")
    fold(b, [entry("s1", Q1)], author=keys.ANALYST)
    assert_status(run("history_folded_by_event", b.build()), Status.FAIL, "author 'databricks_analyst', not "
                                                                          "'run_conversation'")


def test_history_folded_by_event_fails_on_live_mutation() -> None:
    trace = two_users()
    trace.live_states[0].state[keys.USER_HISTORY] = [entry("s1", Q1)]  # written into session.state, no event
    assert_status(run("history_folded_by_event", trace), Status.FAIL, "live state of session s1 at the end of turn 0",
                  "session.state was mutated directly")


def test_history_folded_by_event_not_applicable_without_history() -> None:
    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")  # no fold: history_keeps_newest names that absence
    assert_status(run("history_folded_by_event", b.build()), Status.NOT_APPLICABLE)
    assert_status(run("history_keeps_newest", b.build()), Status.FAIL, "no 'user:rlm:history' history list after "
                  "turn 0", "the history is never folded")
    assert_status(run("history_folded_by_event", happy_trace()), Status.PASS)


def test_history_keeps_newest_says_which_shape_it_needs_when_the_key_holds_another() -> None:
    """A history kept as one string (a transcript) is no list of entries: the check cannot tell the newest entry,
    and said "no history list ... never folded" (a false failure). It says what it found and what it needs."""
    b = TraceBuilder()
    one_turn(b, Q1, session="s1", user="alice")
    b.trace.persisted.pop()
    b.event(keys.RUN_CONVERSATION, delta={keys.USER_HISTORY: f"Q: {Q1}"}, invocation_id="history-0")
    b.snapshot()
    assert_status(run("history_keeps_newest", b.build()), Status.NOT_APPLICABLE,
                  f"history_key {keys.USER_HISTORY!r} holds a str", "needs a list", "newest last",
                  "Fix: map history_key to a key holding a list")


# --- app_data_shared ---------------------------------------------------------------------------------

SNIPPETS = {"sales_by_region": {"code": "print(1)", "description": "totals"}}


def snippets_trace(*, key: str = keys.SNIPPETS, second_prompt: str = "Saved: sales_by_region") -> Trace:
    b = TraceBuilder()
    b.start_turn("Keep a helper.", session_id="s1", user_id="alice")
    b.request(b.profile.analyst, response_calls=["save_snippet"])
    b.event(b.profile.analyst, function_calls=["save_snippet"])
    b.event(b.profile.analyst, function_responses=["save_snippet"], delta={key: SNIPPETS})
    b.exit_loop()
    b.end_turn()
    one_turn(b, "Which helpers exist?", session="s2", user="bob", prompt=second_prompt)
    return b.build()


def test_app_data_shared_passes_when_other_users_see_it() -> None:
    assert_status(run("app_data_shared", snippets_trace()), Status.PASS, "holds what event #2",
                  "of user bob shows 'app:rlm:snippets'")


def test_app_data_shared_fails_when_the_prompt_or_storage_lacks_it() -> None:
    assert_status(run("app_data_shared", snippets_trace(second_prompt="nothing saved")), Status.FAIL,
                  "of user bob does not show 'app:rlm:snippets' item(s) 'sales_by_region'")
    trace = snippets_trace()
    trace.persisted[-1].app_state.clear()
    assert_status(run("app_data_shared", trace), Status.FAIL,
                  "persisted snapshot of session s2 after turn 1 (user bob): app_state 'rlm:snippets' is <absent>")


def test_app_data_shared_fails_on_a_tool_writing_user_scope() -> None:
    assert_status(run("app_data_shared", snippets_trace(key="user:rlm:snippets")), Status.FAIL,
                  "event #2", "save_snippet saved 'user:rlm:snippets', none of them app: scope")


def test_app_data_shared_not_applicable_without_app_writes() -> None:
    assert_status(run("app_data_shared", two_users()), Status.NOT_APPLICABLE)


# --- context_budget ----------------------------------------------------------------------------------


def budget_trace(prompt: str, counts: dict[str, int] | None = None) -> Trace:
    b = TraceBuilder()
    one_turn(b, "go", session="s1", user="alice", prompt=prompt + '\n\nYou are an agent. Your internal name is "x".')
    trace = b.build()
    trace.token_counts = [TokenCountRecord(index=i, text=t, tokens=n) for i, (t, n) in enumerate((counts or {}).items())]
    return trace


def test_context_budget_not_applicable_without_a_budget() -> None:
    assert_status(run("context_budget", budget_trace("short")), Status.NOT_APPLICABLE, "limits.context_budget_tokens")


def test_context_budget_short_context_needs_no_count() -> None:
    scenario = scenario_with(context_budget_tokens=50)
    assert_status(run("context_budget", budget_trace("a short prompt", {}), scenario=scenario), Status.PASS,
                  "no count needed")


def test_context_budget_long_context_must_be_counted_within_budget() -> None:
    scenario = scenario_with(context_budget_tokens=5)
    prompt = "one two three four five six seven"
    assert_status(run("context_budget", budget_trace(prompt), scenario=scenario), Status.FAIL, "request #0",
                  "it was never counted")
    assert_status(run("context_budget", budget_trace(prompt, {prompt: 7}), scenario=scenario), Status.FAIL,
                  "context counted 7 tokens > budget 5")
    assert_status(run("context_budget", budget_trace(prompt, {prompt: 5}), scenario=scenario), Status.PASS,
                  "context counted 5 tokens <= budget 5")
    # a count of some other text (a shorter candidate the target then extended) does not vouch for this one
    assert_status(run("context_budget", budget_trace(prompt, {"one two": 2}), scenario=scenario), Status.FAIL,
                  "never counted")
