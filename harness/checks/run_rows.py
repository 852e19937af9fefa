"""The rows a run adds beside the checks: whether its recording and its script held.

``cassette``: in replay, the cassette belongs to this scenario and target and still matches what the target sends
(a mismatch: the other checks judge a scripted re-run). ``script``: in scripted mode, every model call was answered
by a scripted step or a declared fault and every step was asked for (harness/run/script_fit.py says which did
not). Not registered checks: the runner adds them, so ``--check`` selections and ``explain`` never list them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import CheckResult, failed, passed

if TYPE_CHECKING:
    from ..trace.model import Trace

CASSETTE_VERDICT = "cassette"
"""The verdict row of a replayed run: the cassette is this scenario's and still matches what the target sends."""
SCRIPT_VERDICT = "script"
"""The verdict row of a scripted run: the model traffic followed the scenario's script."""


def cassette_held() -> CheckResult:
    return passed(CASSETTE_VERDICT, "The cassette belongs to this scenario and target, and replayed every recorded "
                                    "call, each with the request it was recorded for.")


def cassette_stale(error: str) -> CheckResult:
    return failed(CASSETTE_VERDICT, error, (
        "The other checks of this scenario judged a re-run against the scenario's scripted model "
        "(--llm-mode scripted): they say whether the change broke an invariant.",))


def script_verdict(trace: Trace) -> tuple[CheckResult, ...]:
    """The ``script`` row of a scripted run (none in replay or live)."""
    if trace.llm_mode != "scripted":
        return ()
    if trace.script_problems:
        return (failed(SCRIPT_VERDICT, "The run did not follow the scenario's script: the agent called its model "
                                       "more or less often than scripted, or the script is wrong. The checks still "
                                       "judged the run.", trace.script_problems),)
    return (passed(SCRIPT_VERDICT, "Every model call was answered by a scripted step (or a declared fault) and "
                                   "every scripted step was asked for."),)
