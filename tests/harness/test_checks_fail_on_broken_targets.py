"""Every registered check is shown to FAIL on a deliberately broken target, with evidence naming what failed.

For each check there is at least one (target, scenario) pair: ``legacy`` (the seeds'
before-state, replayed from ``cassettes/legacy/``) where it fails, otherwise a
purpose-built broken target from ``tests/broken_targets.py`` (run through the
``module:attr`` target path against the local scripted endpoint, so no cassette is
needed). A check registered without a proof here makes ``test_every_check_has_a_failing_proof``
fail. Each (target, scenario) pair runs once per module (cached).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.checks import ALL_CHECK_NAMES, Status, registered_checks
from harness.llm.modes import LlmMode
from harness.result import ScenarioResult
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario
from tests.broken_targets import BROKEN_TARGETS

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
CASSETTES = ROOT / "cassettes"
BROKEN_MODULE = "tests.broken_targets"

# What a piece of evidence must point at: an event, a request, a row/snapshot, a live state,
# a plugin slot, an artifact or a turn — the way harness/checks/evidence.py spells them.
NAMES_SOMETHING = re.compile(
    r"event #\d+|request #\d+|persisted row seq \d+|persisted snapshot of session \S+|live state of session \S+"
    r"|plugin #\d+|artifact \w+ \(session|turn \d+ \(session|session \S+ turn \d+|contract case \w+"
)


@dataclass(frozen=True)
class Proof:
    check: str
    target: str  # "legacy" or a factory name in tests.broken_targets
    scenario: str  # a name in scenarios/, or a path from the repository's root (without .yaml)
    evidence: str  # a substring one evidence line must hold

    @property
    def target_spec(self) -> str:
        return self.target if self.target == "legacy" else f"{BROKEN_MODULE}:{self.target}"

    @property
    def session_service(self) -> str | None:
        """``service:NAME``: the reference agent on the broken session service tests.broken_services:NAME."""
        return f"tests.broken_services:{self.target.removeprefix('service:')}" if self.target.startswith(
            "service:") else None

    @property
    def id(self) -> str:
        return f"{self.check}-{self.target}-{Path(self.scenario).name}"


PROOFS: tuple[Proof, ...] = (
    Proof("no_pruning_plugin", "legacy", "single_delegation", "plugin #1 'RlmContextPruningPlugin' is in App.plugins"),
    Proof("summary_persisted", "legacy", "single_delegation",
          "but no results_processor row after persisted row seq"),
    Proof("summary_persisted", "no_output_key", "single_delegation",
          "but no results_processor row after persisted row seq"),
    Proof("no_temp_persisted", "temp_leaking_service", "single_delegation", "state_delta holds 'temp:rlm:"),
    Proof("stage_gating", "no_stage_gate", "stale_glue_attempt",
          "job_builder ran Job_B without a fresh delegate_code_results before it in turn 0 (stale trigger)"),
    Proof("stage_gating", "legacy", "max_iterations", "results_processor sent 1 model requests (request #"),
    Proof("artifacts_consumed", "legacy", "single_delegation", "status 'executed' although event #"),
    Proof("artifacts_consumed", "unconsumed_artifacts", "single_delegation", "status 'executed' although event #"),
    Proof("minimal_deltas", "legacy", "single_delegation", "looks like a whole-state delta"),
    # job_builder may write the stage's artifact ids and instruction (crash recovery re-opens a stage), so three
    # of the whole state's keys are foreign to it: each is named, under the whole-state threshold.
    Proof("minimal_deltas", "whole_state_delta", "single_delegation",
          "key 'rlm:iteration' not owned by job_builder"),
    Proof("none_deletes", "null_storing_service", "two_turns_one_session",
          "state_delta stores null for 'rlm:exit_requested'"),
    Proof("no_unpersisted_mutation", "legacy", "single_delegation",
          "key 'rlm:databricks_run_id' is 'single_delegation-0' in memory but <absent> in storage"),
    Proof("no_unpersisted_mutation", "direct_mutation", "single_delegation",
          "key 'rlm:last_execution_success' is True in memory but <absent> in storage"),
    Proof("summary_reaches_prompt", "summary_not_in_prompt", "two_turns_one_session",
          "neither its system_instruction nor its contents holds the summary 'The total sales amount is 200.'"),
    Proof("summary_reaches_prompt", "legacy", "single_delegation",
          "follows a results_processor run, but no 'rlm:last_results_summary' was written before it"),
    Proof("state_budget", "legacy", "huge_stdout", "(largest key 'rlm:execution_stdout')"),
    Proof("state_budget", "bloated_state", "huge_stdout", "(largest key 'rlm:last_stdout')"),
    Proof("stale_flags_cleared", "stale_flags_by_mutation", "two_turns_one_session",
          "flag 'rlm:exit_requested' (= True persisted after turn 0) was not cleared by an appended event"),
    Proof("processor_model_runs", "legacy", "single_delegation",
          "results_processor sent no model request after this execution"),
    Proof("processor_model_runs", "processor_injected_via_before_agent", "single_delegation",
          "results_processor sent no model request after this execution"),  # 2.x adds: "the agent was skipped"
    Proof("instructions_render", "legacy", "single_delegation", "leftover placeholder(s) {rlm:last_results_summary?}"),
    Proof("instructions_render", "analyst_fstring_prompt", "single_delegation", "Context variable not found: `tbl`"),
    Proof("outcome_from_storage", "legacy", "single_delegation",
          "outcome.termination is 'success' but the persisted 'rlm:termination_reason' is None"),
    Proof("outcome_from_storage", "outcome_from_yielded_temp_flags", "final_answer",
          "outcome.final_answer is None but the persisted 'rlm:final_answer' is '200'"),
    Proof("loop_without_transfers", "analyst_transfers", "single_delegation", "transfers to 'job_builder'"),
    Proof("history_folded_by_event", "history_by_mutation", "history_two_sessions",
          "'user:rlm:history' holds 1 entries in memory, but storage and this invocation's events account for "
          "<absent>: session.state was mutated directly"),
    Proof("user_history_scoped", "history_in_app_scope", "history_second_user_isolated",
          "of user analyst_2 (session history_second_user_isolated-1) shows user analyst_1's question"),
    Proof("user_history_scoped", "history_by_mutation", "history_two_sessions",
          "the user's history did not carry over"),
    Proof("app_data_shared", "snippets_in_user_scope", "app_snippets_shared",
          "save_snippet saved 'user:rlm:snippets', none of them app: scope"),
    Proof("context_budget", "budget_ignored", "history_long_budget", "context counted 323 tokens > budget 300"),
    Proof("summary_reaches_prompt", "summary_only_in_history", "two_turns_one_session",
          "it is only in the contents (the conversation history quoting the processor's answer)"),
    Proof("previews_bounded", "preview_off_by_one", "preview_boundary",
          "its preview shows 41 of them, more than the limit of 40"),
    Proof("previews_bounded", "preview_off_by_one", "huge_stdout", "more than the limit of 2000"),
    Proof("artifacts_consumed", "consumed_at_execution", "single_delegation",
          "already 'consumed' right after event #"),
    Proof("history_keeps_newest", "history_keeps_oldest", "history_over_limit",
          "has no entry for turn 2's question 'Third question, about the east region?'"),
    Proof("sublm_batch_concurrent", "sublm_one_at_a_time", "llm_query_batched_slow",
          "llm_query_batched of 8 prompts took 3."),
    Proof("sublm_batch_concurrent", "batch_one_by_one_in_executor", "llm_query_batched_slow",
          "llm_query_batched of 8 prompts took 3."),
    Proof("sublm_batch_concurrent", "batch_split_untimed_in_executor", "llm_query_batched_slow",
          "reports no llm_query_batched call (sublm_batches is empty) and 8 single, unbatched sub-LM calls"),
    Proof("executor_env_clean", "executor_env_leak", "executor_environment",
          "the code's environment holds the canary credential(s) planted in the host of AWS_SECRET_ACCESS_KEY, "
          "DATABRICKS_CLIENT_SECRET, DATABRICKS_HOST, DATABRICKS_TOKEN, GEMINI_API_KEY, GOOGLE_API_KEY"),
    Proof("executor_env_clean", "executor_env_leak_one_shot", "executor_environment_one_shot",
          "one-shot Job_B): the code's environment holds the canary credential(s) planted in the host of"),
    Proof("executor_env_clean", "executor_env_leak_warm", "executor_environment",
          "warm Job_B): the code's environment holds the canary credential(s) planted in the host of"),
    Proof("executor_confined", "unconfined_executor", "executor_escape_probe",
          "connect_local: the code could connect to a local TCP port that is not the LM bridge"),
    Proof("executor_confined", "unconfined_executor", "executor_escape_probe",
          "write_outside: the code could write a file outside the executor's folders"),
    Proof("executor_confined", "executor_without_limits", "executor_escape_probe",
          "processes: the code could start processes past its process cap"),
    Proof("executor_confined", "executor_without_limits", "executor_escape_probe",
          "memory: the code could allocate twice its address-space limit: no address-space limit"),
    Proof("stale_writer_rejected", "service:lost_update", "single_delegation",
          "expected the stale writer's append to be refused"),
    Proof("get_session_config_honoured", "service:config_ignoring", "single_delegation",
          "get_session(num_recent_events=3) returned events"),
    Proof("event_order_preserved", "service:newest_first", "single_delegation", "events out of append order"),
    Proof("session_service_contract", "service:delete_keeps_events", "single_delegation",
          "a session re-created under a deleted id holds the deleted one's data"),
    Proof("scenario_expectations", "legacy", "single_delegation",
          "termination: expected 'exit_loop', turn 0 (session single_delegation-0) ended with 'success'"),
    Proof("adk_recording_matches", "adk_case_off_by_one", "tests/user_agents/adk_case/scenarios/tools_add_numbers",
          "event #2 (author calculator).actions.state_delta.last_sum: recorded 5, the run has 6"),
)


@functools.cache
def run_pair(target: str, scenario: str) -> ScenarioResult:
    """One run per (target, scenario): legacy replays its recorded cassette, broken targets run scripted."""
    loaded = load_scenario((ROOT / scenario if "/" in scenario else SCENARIOS / scenario).with_suffix(".yaml"))
    if target == "legacy":
        options = RunOptions(target="legacy", llm_mode=LlmMode.REPLAY, cassette_dir=CASSETTES)
    elif target.startswith("service:"):  # the reference agent on a broken session service
        options = RunOptions(llm_mode=LlmMode.SCRIPTED,
                             session_service=f"tests.broken_services:{target.removeprefix('service:')}")
    else:
        options = RunOptions(target=f"{BROKEN_MODULE}:{target}", llm_mode=LlmMode.SCRIPTED)
    return run_scenario(loaded, options)


@pytest.mark.parametrize("name", ALL_CHECK_NAMES)
def test_every_check_has_a_failing_proof(name: str) -> None:
    proofs = [p for p in PROOFS if p.check == name]
    assert proofs, (f"check {name!r} has no (target, scenario) pair on which it is shown to fail: add a Proof "
                    f"to PROOFS (legacy if it fails there, else a broken target in tests/broken_targets.py)")


def test_all_registered_checks_are_listed() -> None:
    assert set(ALL_CHECK_NAMES) == set(registered_checks())
    assert {p.check for p in PROOFS} <= set(ALL_CHECK_NAMES), "a proof names an unknown check"


def test_every_broken_target_has_a_proof_of_its_check() -> None:
    proven = {(p.target, p.check) for p in PROOFS}
    missing = {t: c for t, c in BROKEN_TARGETS.items() if (t, c) not in proven}
    assert not missing, f"broken targets without a proof of the check they break: {missing}"


@pytest.mark.parametrize("proof", PROOFS, ids=[p.id for p in PROOFS])
def test_check_fails_on_broken_target(proof: Proof) -> None:
    result = run_pair(proof.target, proof.scenario)
    assert result.error is None, f"{proof.target_spec} on {proof.scenario}: harness error {result.error}"
    by_name = {c.name: c for c in result.checks}
    assert proof.check in by_name, f"{proof.check} did not run on {proof.target_spec}"
    check = by_name[proof.check]
    assert check.status is Status.FAIL, (
        f"{proof.check} should FAIL on {proof.target_spec} / {proof.scenario} but is {check.status.value}: "
        f"{check.explanation} {check.evidence[:3]}")
    assert check.evidence, f"{proof.check} failed without evidence"
    matching = [line for line in check.evidence if proof.evidence in line]
    assert matching, f"no evidence line of {proof.check} holds {proof.evidence!r}: {list(check.evidence)}"
    assert any(NAMES_SOMETHING.search(line) for line in matching), (
        f"the evidence of {proof.check} does not name an event, request, row or turn: {matching}")


def test_module_attr_target_reports_its_name() -> None:
    result = run_pair("whole_state_delta", "single_delegation")
    assert result.target == f"{BROKEN_MODULE}:whole_state_delta"
    assert result.trace is not None and result.trace.target == "whole_state_delta"
