"""Checks: the Definition of Done as invariants over a finished trace.

``run_checks`` runs the registered checks (all, or a scenario's selection) and
never lets one check's crash stop the others: a crashing check is reported as a
FAIL that says it is a bug in the check, with the traceback as evidence.
"""

from __future__ import annotations

import traceback

from .base import CheckContext, CheckResult, CheckSpec, Status, check, failed, not_applicable, passed, registered_checks

ALL_CHECK_NAMES: tuple[str, ...] = tuple(registered_checks())
"""Every built-in check, by name (the report's order)."""


def _validate_names(names: list[str], where: str, known: dict[str, CheckSpec]) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown check name(s) in {where}: {', '.join(map(repr, unknown))}; "
                         f"known checks: {', '.join(known)}")


def run_checks(ctx: CheckContext, *, only: list[str] | None = None,
               skip: dict[str, str] | None = None) -> list[CheckResult]:
    """Run the registered checks on ``ctx``, in name order.

    ``only`` limits the run to those names; ``skip`` maps a name to the reason it
    does not apply (reported as not-applicable with that reason). The runner passes
    the scenario's ``expect.checks.only`` / ``expect.checks.skip``. An unknown name
    in either raises ``ValueError`` naming the known checks.
    """
    specs = registered_checks()
    _validate_names(list(only or ()), "only", specs)
    _validate_names(list(skip or {}), "skip", specs)
    results: list[CheckResult] = []
    for name, spec in specs.items():
        if only is not None and name not in only:
            continue
        if skip and name in skip:
            results.append(not_applicable(name, f"skipped by the scenario: {skip[name]}"))
            continue
        results.append(_run_one(spec, ctx))
    return results


def _run_one(spec: CheckSpec, ctx: CheckContext) -> CheckResult:
    try:
        result = spec.fn(ctx)
    except Exception as exc:  # a broken check must not stop the run; its traceback is the evidence
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return failed(spec.name, f"the check crashed with {type(exc).__name__}: {exc} — this is a bug in the check",
                      "".join(lines).rstrip().splitlines())
    if not isinstance(result, CheckResult) or result.name != spec.name:
        return failed(spec.name, f"the check returned {result!r} instead of a CheckResult named {spec.name!r} — "
                                 f"this is a bug in the check")
    return result


__all__ = ["ALL_CHECK_NAMES", "CheckContext", "CheckResult", "CheckSpec", "Status", "check", "failed",
           "not_applicable", "passed", "registered_checks", "run_checks"]
