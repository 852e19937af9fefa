"""The code Job_B runs sees no credentials: none of the host's planted canary keys or tokens reach its output."""

from __future__ import annotations

from ..canaries import CANARY_PREFIX, CREDENTIAL_VARIABLES
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped

NAME = "executor_env_clean"


@check(
    NAME,
    title="Executed code sees no credentials",
    why="The analyst's code runs in Job_B with an allow-listed environment: no model key, no workspace token. The "
        "harness plants canary values in those variables in the host for the run (harness/canaries.py); a Job_B "
        "that inherits the host's environment shows their names or values in what the code prints (scenario "
        "executor_environment prints the credential-like names it can see).",
    dod_item="002: Job_B isolation (no secrets in the executor's environment)",
)
def executor_env_clean(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    # Names are looked for always (a workspace's Job_B may be handed real ones); canary values where planted.
    names = trace.planted_credentials or list(CREDENTIAL_VARIABLES)
    outputs = [x for x in trace.executions if x.stdout_head is not None]
    if not outputs:
        return not_applicable(NAME, "No execution's output is in the trace.")
    problems = []
    for execution in outputs:
        text = f"{execution.stdout_head}\n{execution.stdout_tail or ''}"
        seen = [name for name in names if name in text]
        if CANARY_PREFIX in text:
            seen.append("a canary value")
        if seen:
            problems.append(f"artifact {execution.artifact_id} (session {execution.session_id}, iteration "
                            f"{execution.iteration}): the executed code saw {', '.join(seen)} in its environment")
    if problems:
        return failed(NAME, f"Code run by Job_B saw the host's credentials ({len(problems)} execution(s)).",
                      capped(problems))
    planted = "planted in the host's environment" if trace.planted_credentials else "named (none planted)"
    return passed(NAME, f"No credential {planted} ({', '.join(names)}) appears in the output of "
                        f"{len(outputs)} execution(s).")
