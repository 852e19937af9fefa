"""The session-state keys this agent uses, and who writes each (one author per key)."""

from __future__ import annotations

# context_loader
CONTEXT = "context"  # the task data executed code sees as `context` (written only when the session has none)
CONTEXT_DESCRIPTION = "context_description"  # type and size of `context`, for the code generator's prompt

# code_generator (output_key): the model's whole answer, holding the ```repl``` block(s) to run
GENERATED_CODE = "generated_code"

# code_executor: one event per execution
EXECUTION_RESULT = "execution_result"  # bounded preview of the last execution's stdout
ITERATION_HISTORY = "iteration_history"  # list of {iteration, code_artifact, stdout, error}, this turn only
ITERATION = "iteration"  # executions so far in this turn
FINAL_ANSWER = "final_answer"  # set when executed code called FINAL(...) / FINAL_VAR(name)
ARTIFACT_PREFIX = "artifact:"  # "artifact:<code artifact id>": "executed" (executor), then "consumed" (checker)

# completion_checker
STATUS = "rlm_status"  # how the loop ended: "done", "max_iterations" or "failed"

# result_formatter (output_key)
FORMATTED_ANSWER = "formatted_answer"

# Per-turn flags: a finished turn leaves them set; the next turn starts by clearing them with an event.
TURN_FLAGS = (FINAL_ANSWER, STATUS)

EXECUTED = "executed"
CONSUMED = "consumed"
STATUS_DONE = "done"
STATUS_MAX_ITERATIONS = "max_iterations"
STATUS_FAILED = "failed"


def artifact_key(artifact_id: str) -> str:
    return ARTIFACT_PREFIX + artifact_id
