"""The state contract: every state key the reference agent reads or writes.

This is seed 000's Phase 0 table as code. Writers import the constants below; no
other module spells a key as a string literal. The harness reads ``CONTRACT`` to
check that each writer's state delta holds only keys the contract gives it.

Scopes follow ADK's prefixes: ``temp:`` lives for one invocation and is never
persisted; no prefix is session scope; ``user:`` is shared by one user's
sessions; ``app:`` by every user of the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Scope(str, Enum):
    SESSION = "session"
    TEMP = "temp"
    USER = "user"
    APP = "app"


@dataclass(frozen=True)
class KeySpec:
    """One key (or, with ``family=True``, every key starting with ``key``)."""

    key: str
    writers: tuple[str, ...]
    readers: tuple[str, ...]
    description: str
    family: bool = False

    @property
    def scope(self) -> Scope:
        for prefix, scope in (("temp:", Scope.TEMP), ("user:", Scope.USER), ("app:", Scope.APP)):
            if self.key.startswith(prefix):
                return scope
        return Scope.SESSION

    def matches(self, key: str) -> bool:
        return key.startswith(self.key) if self.family else key == self.key


# Writer names: agents by their ADK name, tools by function name, plus the two
# plugins and run_conversation. The harness maps these through a target profile.
ANALYST = "databricks_analyst"
JOB_BUILDER = "job_builder"
RESULTS_PROCESSOR = "results_processor"
DELEGATE_TOOL = "delegate_code_results"
EXIT_TOOL = "exit_loop"
INJECTION_PLUGIN = "rlm_context_injection"
STAGE_PLUGIN = "rlm_stage_tracking"
RUN_CONVERSATION = "run_conversation"
SNIPPET_TOOL = "save_snippet"
TURN_LOG_PLUGIN = "rlm_turn_log"

# --- durable, session scope -------------------------------------------------
ITERATION = "rlm:iteration"
LAST_ARTIFACT_ID = "rlm:last_artifact_id"
LAST_RESULTS_SUMMARY = "rlm:last_results_summary"
LAST_RESULT_JSON_PATH = "rlm:last_result_json_path"
LAST_EXECUTION_SUCCESS = "rlm:last_execution_success"
FINAL_ANSWER = "rlm:final_answer"
TERMINATION_REASON = "rlm:termination_reason"
EXIT_REQUESTED = "rlm:exit_requested"
FATAL_ERROR = "rlm:fatal_error"
FATAL_ERROR_MSG = "rlm:fatal_error_msg"
METRICS = "rlm:metrics"
FORCED_ANSWER = "rlm:forced_answer"

# --- invocation glue, temp scope ----------------------------------------------
STAGE = "temp:rlm:stage"
ACTIVE_ARTIFACT_ID = "temp:rlm:active_artifact_id"
ARTIFACT_ID = "temp:rlm:artifact_id"
CODE = "temp:rlm:code"
SUBLM_INSTRUCTION = "temp:rlm:sublm_instruction"
EXECUTION_STDOUT = "temp:rlm:execution_stdout"
EXECUTION_STDERR = "temp:rlm:execution_stderr"
STDOUT_TRUNCATED = "temp:rlm:stdout_truncated"
STDERR_TRUNCATED = "temp:rlm:stderr_truncated"
EXECUTION_SUCCESS = "temp:rlm:execution_success"
EXECUTION_STATUS = "temp:rlm:execution_status"
RUN_ID = "temp:rlm:run_id"
RESULT_JSON_PATH = "temp:rlm:result_json_path"
FINAL_FOUND = "temp:rlm:final_found"
PENDING_FINAL_ANSWER = "temp:rlm:final_answer"
# Tool calls and results of the current turn, folded into USER_HISTORY by run_conversation at its end.
TURN_LOG = "temp:rlm:turn_log"

# --- scoped memory (seed 003) ---------------------------------------------------
# One user's earlier turns, across their sessions (never another user's).
USER_HISTORY = "user:rlm:history"
# Code snippets saved with save_snippet, shared by every user of the app.
SNIPPETS = "app:rlm:snippets"

# Stage values of STAGE.
STAGE_DELEGATED = "delegated"
STAGE_EXECUTED = "executed"
STAGE_PROCESSED = "processed"

CONTRACT: tuple[KeySpec, ...] = (
    KeySpec(ITERATION, (DELEGATE_TOOL,), (DELEGATE_TOOL, JOB_BUILDER),
            "Number of delegations so far in this session."),
    KeySpec(LAST_ARTIFACT_ID, (DELEGATE_TOOL,), (ANALYST,),
            "Artifact id of the latest delegation."),
    KeySpec(LAST_RESULTS_SUMMARY, (RESULTS_PROCESSOR,), (ANALYST,),
            "results_processor's text, via output_key; shown in the analyst's next prompt."),
    KeySpec(LAST_RESULT_JSON_PATH, (JOB_BUILDER,), (ANALYST,),
            "Volume path of the latest result JSON (the canonical stdout/stderr)."),
    KeySpec(LAST_EXECUTION_SUCCESS, (JOB_BUILDER,), (ANALYST,),
            "Whether the latest Job_B run succeeded."),
    KeySpec(METRICS, (JOB_BUILDER,), (JOB_BUILDER, RUN_CONVERSATION),
            "Compact per-session totals: Job_B runs, statuses, sub-LM calls and tokens, execution time."),
    KeySpec(FINAL_ANSWER, (STAGE_PLUGIN, RUN_CONVERSATION), (RUN_CONVERSATION,),
            "The answer given by FINAL()/FINAL_VAR() in executed code; cleared by run_conversation at the next turn."),
    KeySpec(FORCED_ANSWER, (RUN_CONVERSATION,), (RUN_CONVERSATION,),
            "Best-effort answer from one last 'answer now' request when max_iterations ended the loop."),
    KeySpec(TERMINATION_REASON, (STAGE_PLUGIN, EXIT_TOOL, JOB_BUILDER, RUN_CONVERSATION), (RUN_CONVERSATION,),
            "Why the loop ended: final_answer, exit_loop, fatal_error or max_iterations."),
    KeySpec(EXIT_REQUESTED, (EXIT_TOOL, RUN_CONVERSATION), (RUN_CONVERSATION,),
            "The analyst asked to end the loop; cleared by run_conversation at the next turn."),
    KeySpec(FATAL_ERROR, (JOB_BUILDER, RUN_CONVERSATION), (RUN_CONVERSATION,),
            "Job_B could not be run at all (not a failing user program)."),
    KeySpec(FATAL_ERROR_MSG, (JOB_BUILDER, RUN_CONVERSATION), (RUN_CONVERSATION,),
            "Message for FATAL_ERROR."),
    KeySpec(STAGE, (DELEGATE_TOOL, JOB_BUILDER, STAGE_PLUGIN), (JOB_BUILDER, INJECTION_PLUGIN, STAGE_PLUGIN),
            "Per-iteration stage gate: delegated -> executed -> processed."),
    KeySpec(ACTIVE_ARTIFACT_ID, (DELEGATE_TOOL, JOB_BUILDER), (JOB_BUILDER, INJECTION_PLUGIN, STAGE_PLUGIN),
            "The artifact the current stage refers to."),
    KeySpec(ARTIFACT_ID, (DELEGATE_TOOL, JOB_BUILDER), (JOB_BUILDER,), "Artifact id of the pending delegation."),
    KeySpec(CODE, (DELEGATE_TOOL,), (JOB_BUILDER,), "Code to run (also stored in the volume)."),
    KeySpec(SUBLM_INSTRUCTION, (DELEGATE_TOOL, JOB_BUILDER), (INJECTION_PLUGIN,),
            "What results_processor should look for in the output."),
    KeySpec(EXECUTION_STDOUT, (JOB_BUILDER,), (INJECTION_PLUGIN,), "Bounded stdout preview."),
    KeySpec(EXECUTION_STDERR, (JOB_BUILDER,), (INJECTION_PLUGIN,), "Bounded stderr preview."),
    KeySpec(STDOUT_TRUNCATED, (JOB_BUILDER,), (INJECTION_PLUGIN,), "stdout preview was cut."),
    KeySpec(STDERR_TRUNCATED, (JOB_BUILDER,), (INJECTION_PLUGIN,), "stderr preview was cut."),
    KeySpec(EXECUTION_SUCCESS, (JOB_BUILDER,), (INJECTION_PLUGIN,), "Job_B status was success."),
    KeySpec(EXECUTION_STATUS, (JOB_BUILDER,), (INJECTION_PLUGIN,),
            "Job_B status: success, error, timeout, killed, exit."),
    KeySpec(RUN_ID, (JOB_BUILDER,), (INJECTION_PLUGIN,), "Job_B run id."),
    KeySpec(RESULT_JSON_PATH, (JOB_BUILDER,), (INJECTION_PLUGIN,), "Result JSON path for this stage."),
    KeySpec(FINAL_FOUND, (JOB_BUILDER,), (STAGE_PLUGIN,),
            "Executed code produced FINAL/FINAL_VAR; the loop ends after processing."),
    KeySpec(PENDING_FINAL_ANSWER, (JOB_BUILDER,), (STAGE_PLUGIN,),
            "The FINAL answer of this stage, made durable once results_processor has run."),
    KeySpec(TURN_LOG, (DELEGATE_TOOL, JOB_BUILDER), (TURN_LOG_PLUGIN, RUN_CONVERSATION),
            "This turn's delegations and Job_B results (artifact id, iteration, status); folded into "
            "user:rlm:history at the end of the turn."),
    KeySpec(USER_HISTORY, (RUN_CONVERSATION,), (ANALYST,),
            "The user's earlier turns across sessions: session, question, termination, answer, artifacts (each "
            "cut). Appended by run_conversation's history event only; bounded count, oldest out; the analyst's "
            "prompt shows the newest entries that fit its token budget."),
    KeySpec(SNIPPETS, (SNIPPET_TOOL,), (ANALYST,),
            "Reusable code snippets saved by the analyst (name -> code, description); app-wide, bounded."),
)


def spec_for(key: str) -> KeySpec | None:
    """The contract entry governing ``key``, or None if the key is not in the contract."""
    for spec in CONTRACT:
        if spec.matches(key):
            return spec
    return None


def keys_written_by(writer: str) -> tuple[KeySpec, ...]:
    return tuple(spec for spec in CONTRACT if writer in spec.writers)
