"""Verdict changes of one scenario between two runs: the scenario's own status, then each check's; and the findings
(evidence lines of failing checks) that are new at HEAD or vanished."""

from __future__ import annotations

import re

from ..report.summary import error_headline
from ..result import ScenarioResult
from ..snapshot.normalize import normalize_state
from .model import HARNESS_ROWS, FindingChange, Kind, VerdictChange

# An id the evidence cut short (``invocation e-a07760ea-b…``): the normaliser knows only whole ones.
CUT_ID = re.compile(r"\b(?:e-)?[0-9a-f]{8}(?:-[0-9a-f]*)*…")
KIND_RANK = {"regression": 0, "improvement": 1, "change": 2}
FAILED = frozenset({"fail", "error", "xpass"})  # scenario statuses that make a run red


def _check_kind(before: str | None, after: str | None, *, declared: bool) -> Kind:
    if after == "fail" and before != "fail":
        return "change" if declared else "regression"  # a declared divergence fails on purpose (xfail)
    if before == "fail" and after != "fail":
        return "improvement"
    return "change"


def scenario_change(base: ScenarioResult | None, head: ScenarioResult | None) -> VerdictChange | None:
    """The whole scenario's change: added, vanished, into or out of error (None: neither)."""
    before = base.status if base is not None else None
    after = head.status if head is not None else None
    if head is None:
        return VerdictChange("scenario", before, None, "regression", "the scenario is not in HEAD's run: removed, "
                                                                     "renamed, or no longer selected")
    if base is None:
        kind: Kind = "regression" if after in FAILED else "change"
        why = error_headline(head) if head.verdict == "error" else "a scenario new in HEAD's run"
        return VerdictChange("scenario", None, after, kind, why)
    if after == before or (after not in ("error", "xpass") and before not in ("error", "xpass")):
        return None  # pass <-> fail shows in the checks that changed
    kind = "regression" if after in ("error", "xpass") else "improvement"
    return VerdictChange("scenario", before, after, kind, error_headline(head) if head.verdict == "error" else "")


def check_changes(base: ScenarioResult | None, head: ScenarioResult | None) -> list[VerdictChange]:
    """Each check whose status differs. A side with no checks to compare (the scenario missing, or in error there)
    counts as "not run": only HEAD's failing checks then show (not run -> fail), or nothing when HEAD has none."""
    if head is None or head.verdict == "error":
        return []
    judged = base is not None and base.verdict != "error"
    before_checks = {c.name: c for c in base.checks} if judged and base is not None else {}
    declared = head.declared is not None
    changes = []
    for check in head.checks:
        old = before_checks.get(check.name)
        before, after = (old.status.value if old is not None else None), check.status.value
        if before != after and (judged or after == "fail"):
            changes.append(VerdictChange(check.name, before, after, _check_kind(before, after, declared=declared),
                                         check.explanation))
    now = {c.name for c in head.checks}
    changes += [VerdictChange(c.name, c.status.value, None, "improvement" if c.status.value == "fail" else "change",
                              c.explanation) for c in before_checks.values() if c.name not in now]
    return sort_verdicts(changes)


def sort_verdicts(changes: list[VerdictChange]) -> list[VerdictChange]:
    """Regressions, improvements, changes; in each, the scenario's own change, then checks, then harness rows."""
    return sorted(changes, key=verdict_rank)


def verdict_rank(change: VerdictChange) -> tuple[int, int]:
    return KIND_RANK[change.kind], (0 if change.check == "scenario" else 2 if change.check in HARNESS_ROWS else 1)


def _findings(result: ScenarioResult) -> set[tuple[str, str]]:
    out = set()
    for check in result.checks:
        if check.status.value != "fail" or check.name in HARNESS_ROWS:  # their evidence is a diff, not findings
            continue
        lines = list(check.evidence) or [check.explanation]
        if result.trace is not None:  # ids, paths and clock times drawn afresh each run must not count as new
            lines = list(normalize_state({"lines": lines}, result.trace)["lines"])
        out.update((check.name, CUT_ID.sub("<id>", " ".join(str(line).split()))) for line in lines)
    return out


def finding_changes(base: ScenarioResult | None, head: ScenarioResult | None) -> list[FindingChange]:
    """Evidence lines of failing checks new at HEAD or vanished from it (a check that keeps failing for another
    reason shows here, not in the verdicts)."""
    before = _findings(base) if base is not None else set()
    after = _findings(head) if head is not None else set()
    return ([FindingChange(c, t, "new") for c, t in sorted(after - before)]
            + [FindingChange(c, t, "vanished") for c, t in sorted(before - after)])
