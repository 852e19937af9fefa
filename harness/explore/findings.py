"""What one generated run says: a finding per failed check, a harness bug, or an example to discard.

Only registered checks make findings. The harness's own rows are not about the target: ``script`` (a generated
script never fits exactly — unused steps are the generator's slack), ``cassette`` and ``snapshot``; nor is
``scenario_expectations`` (generated scenarios expect nothing). A run whose target asked a model more often than
scripted, or that could not run for a reason of its own (not the harness), is discarded and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..checks.base import Status
from ..result import ScenarioResult
from .plan import overran

HARNESS_BUG = "harness_bug"
"""The pseudo-check of a generated scenario that crashed the harness itself (a bug of rlm-conformance)."""
TARGET_HUNG = "target_hung"
"""The pseudo-check of an example that ran past ``--example-timeout`` (hang.py): the target hung."""
TURNS_RAISED = "turns_raised"
"""The pseudo-check of an obstruction: turns raised in most examples (reported once, with the smallest example)."""
NOT_FINDINGS = frozenset({"scenario_expectations"})
_MISSING_STATE_KEY = re.compile(r"Context variable not found: `([^`]+)`")
"""ADK's error for a key an instruction template reads (``{silo}``) that the session's state does not hold."""
_HARNESS_BUG_TEXT = "the harness (a bug"


@dataclass(frozen=True)
class Verdict:
    failing: dict[str, str] = field(default_factory=dict)  # check -> shape of its evidence
    evidence: dict[str, str] = field(default_factory=dict)  # check -> its first line of evidence, as written
    discarded: str | None = None  # why the example says nothing about the target
    raised: tuple[str, ...] = ()  # how each turn that raised ended (type and origin)
    used_steps: dict[str, int] = field(default_factory=dict)
    first_raise: str | None = None  # the first turn's exception, described (type, origin, message)
    missing_keys: tuple[str, ...] = ()  # state keys an instruction read and no session held (ADK's KeyError)


def shape(explanation: str, evidence: tuple[str, ...]) -> str:
    """The evidence with its particulars (numbers, quoted values, ids) blanked: what kind of failure it is."""
    text = evidence[0] if evidence else explanation
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b[0-9a-f]{8,}\b|\d+", "#", text)
    return text[:120]


def judge(result: ScenarioResult, checks: frozenset[str]) -> Verdict:
    """``checks``: the registered checks that make findings (all, or the ones ``--check`` names)."""
    from .plan import steps_used

    if result.error is not None:
        if _HARNESS_BUG_TEXT in result.error:
            return Verdict(failing={HARNESS_BUG: shape(result.error, ())})
        return Verdict(discarded=f"could not run: {result.error.splitlines()[0][:200]}")
    problems = list(result.trace.script_problems) if result.trace is not None else []
    if overran(problems):
        return Verdict(discarded="the target asked a model more often than the generated script had answers")
    failed = [c for c in result.checks if c.status is Status.FAIL and c.name in checks and c.name not in NOT_FINDINGS]
    raised = tuple(f"{t.outcome.crash.type} from {t.outcome.crash.origin}" for t in result.crashed_turns
                   if t.outcome.crash is not None)
    crashes = [t.outcome.crash for t in result.crashed_turns if t.outcome.crash is not None]
    missing = tuple(dict.fromkeys(m.group(1) for c in crashes if (m := _MISSING_STATE_KEY.search(c.message))))
    return Verdict(failing={c.name: shape(c.explanation, c.evidence) for c in failed},
                   evidence={c.name: first_line(c.evidence[0] if c.evidence else c.explanation) for c in failed},
                   raised=raised, used_steps=steps_used(problems),
                   first_raise=first_line(crashes[0].describe()) if crashes else None, missing_keys=missing)


def fails(check: str, verdict: Verdict) -> bool:
    """Whether ``verdict`` shows ``check`` (the obstruction's pseudo-check: a turn raised)."""
    return check in verdict.failing or (check == TURNS_RAISED and bool(verdict.raised))


def evidence_of(check: str, verdict: Verdict) -> str | None:
    return verdict.first_raise if check == TURNS_RAISED else verdict.evidence.get(check)


def first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
