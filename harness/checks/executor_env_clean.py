"""The code Job_B runs sees no credential: only the profile's allowed environment variables, no planted canary.

Evidence comes from the code itself: the ``executor_environment`` scenarios run a probe that prints, on stdout,
the name of every variable in its environment (``os.environ`` and the environment the process was started
with, ``/proc/self/environ``) and the names whose value holds a canary credential the harness planted in the
host (``harness/run/canaries.py``). The check reads that output from each execution's result (the result JSON
Job_B wrote), on whichever kind of process ran it: ``executor_environment`` on the run's (warm by default),
``executor_environment_one_shot`` on a one-shot process, so a leak in either path fails every run. On another
agent it reads the output from the state key the profile maps to stdout (``printed.py``).
"""

from __future__ import annotations

from ..run.canaries import CANARY_PREFIX
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped
from .printed import Printed, printed_outputs, unseen_reason

NAME = "executor_env_clean"
NAMES_LINE = "rlm-env names:"
CANARIES_LINE = "rlm-env canaries:"
"""What the probe prints (scenarios/executor_environment.yaml): variable names, then the names holding a canary."""
LOCALE_PREFIX = "LC_"  # the probe leaves locale variables out: Python's C-locale coercion may add LC_CTYPE
SHOWN_NAMES = 12


def _probe(text: str) -> tuple[list[str], list[str]] | None:
    """(names, canary-holding names) the probe printed in ``text``, or None if it printed none."""
    lines = text.splitlines()
    names = next((line[len(NAMES_LINE):].split() for line in lines if line.startswith(NAMES_LINE)), None)
    if names is None:
        return None
    canaries = next((line[len(CANARIES_LINE):].split() for line in lines if line.startswith(CANARIES_LINE)), [])
    return names, [n for n in canaries if n != "-"]


def _label(run: Printed) -> str:
    return run.label if run.mode is None else f"{run.label.removesuffix(')')}, {run.mode} Job_B)"


def _judge(run: Printed, allowed: set[str]) -> tuple[str | None, str | None]:
    """(problem, clean evidence) for one execution; both None when it neither probed nor showed a canary."""
    probe = _probe(run.text)
    if probe is None and CANARY_PREFIX not in run.text:
        return None, None
    names, canaries = probe or ([], [])
    extra = [n for n in names if n not in allowed and not n.startswith(LOCALE_PREFIX)]
    parts = []
    if canaries or CANARY_PREFIX in run.text:
        held = f" of {', '.join(sorted(canaries))}" if canaries else " (a value the code printed)"
        parts.append(f"holds the canary credential(s) planted in the host{held}")
    if extra:
        more = f" … ({len(extra) - SHOWN_NAMES} more)" if len(extra) > SHOWN_NAMES else ""
        parts.append(f"sees variable(s) outside the allow-list: {', '.join(extra[:SHOWN_NAMES])}{more}")
    if parts:
        return f"{_label(run)}: the code's environment " + "; ".join(parts), None
    return None, f"{_label(run)}: sees only {', '.join(names) or 'no variable'}"


@check(
    NAME,
    title="The executed code sees no credentials",
    why="Analyst code is model-written and runs as your user: an executor that passes its host's environment on "
        "hands it the Gemini key and the Databricks token. Job_B's environment must be an allow-list (profile "
        "executor_env_allowed). Replay and scripted runs plant canary credentials in the host for the run "
        "(harness/run/canaries.py), so a leak shows in every mode; the executor_environment scenarios print what the "
        "code sees, one on the run's kind of Job_B process and one on a one-shot process.",
    dod_item="002: Job_B isolation (no secrets in the executor's environment)",
)
def executor_env_clean(ctx: CheckContext) -> CheckResult:
    allowed = set(ctx.profile.executor_env_allowed)
    runs = printed_outputs(ctx.trace, ctx.profile)
    if runs is None:
        return not_applicable(NAME, f"Nothing the executed code printed can be read: {unseen_reason(ctx.profile)}.")
    problems, clean = [], []
    for run in runs:
        problem, fine = _judge(run, allowed)
        problems += [problem] if problem else []
        clean += [fine] if fine else []
    planted = ", ".join(ctx.trace.planted_credentials) or "none (live mode, or no Job_B run here: replay or a real workspace)"
    if problems:
        return failed(NAME, f"{len(problems)} execution(s) gave the code credentials or variables beyond the "
                            f"allow-list {sorted(allowed)}; canaries planted in the host: {planted}.",
                      capped(problems))
    if not clean:
        return not_applicable(NAME, f"No execution printed its environment ('{NAMES_LINE} ...'): the "
                                    f"executor_environment scenarios do.")
    return passed(NAME, f"{len(clean)} execution(s) printed their environment: allowed names only, no canary "
                        f"(planted in the host: {planted}).", capped(clean))
