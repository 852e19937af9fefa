"""The scenario's own expectations: executions, final answer, termination, state fragments, error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..trace.model import TurnRecord
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import name_snapshot, show
from .timeline import executions, executions_unmapped

NAME = "scenario_expectations"


def _declared_errors(ctx: CheckContext):
    """(turn record, the error text its scenario turn declares with expect_error), in turn order."""
    specs = [turn for session in ctx.scenario.sessions for turn in session.turns]
    for record in ctx.trace.turns:
        if record.turn < len(specs) and specs[record.turn].expect_error is not None:
            yield record, specs[record.turn].expect_error


@check(
    NAME,
    title="Scenario expectations met",
    why="Beyond the invariants, each scenario states what its run must end with: how many executions, the final "
        "answer, how the loop ended (the target's termination named through the profile's termination_map), fragments of the final persisted state, and for failure scenarios the error "
        "(expect.outcome_error for the last turn, a turn's expect_error for that turn).",
    dod_item=None,
)
def scenario_expectations(ctx: CheckContext) -> CheckResult:
    expect = ctx.scenario.expect
    if (expect.executions is None and expect.final_answer is None and expect.termination is None
            and not expect.state and expect.outcome_error is None and not list(_declared_errors(ctx))):
        return not_applicable(NAME, "The scenario's expect block sets no executions, final_answer, termination, "
                                    "state or outcome_error.")
    findings = _Findings()
    last = max(ctx.trace.turns, key=lambda t: t.turn) if ctx.trace.turns else None
    _judge_executions(ctx, findings)
    _judge_outcome(ctx, last, findings)
    _judge_errors(ctx, last, findings)
    if expect.state or expect.state_match == "exact":
        _judge_state(ctx, last, findings)
    return _verdict(findings)


@dataclass
class _Findings:
    """Each expectation ends in one list: met, not met (problems), or not judged (and why)."""

    met: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)

    def compare(self, what: str, ok: bool, detail: str) -> None:
        (self.met if ok else self.problems).append(f"{what}: {detail}")


def _turn_label(last: TurnRecord | None) -> str:
    return f"turn {last.turn} (session {last.session_id})" if last else "no turn"


def _judge_executions(ctx: CheckContext, findings: _Findings) -> None:
    """expect.executions against the executions the profile maps."""
    profile, expected = ctx.profile, ctx.scenario.expect.executions
    if expected is not None and (reason := executions_unmapped(profile)):
        findings.unjudged.append(f"executions: expected {expected}, not counted: {reason}")
    elif expected is not None:
        count = len(executions(ctx.trace, profile))
        findings.compare("executions", count == expected, f"expected {expected}, the trace has {count}")


def _judge_outcome(ctx: CheckContext, last: TurnRecord | None, findings: _Findings) -> None:
    """expect.final_answer and expect.termination against the last turn's outcome."""
    profile, expect, turn_label = ctx.profile, ctx.scenario.expect, _turn_label(last)
    for field_name in ("final_answer", "termination"):
        wanted = getattr(expect, field_name)
        if wanted is None:
            continue
        actual = getattr(last.outcome, field_name) if last else None
        key_field = "termination_key" if field_name == "termination" else "final_answer_key"
        if actual is None and (reason := profile.unmapped(key_field)):
            findings.unjudged.append(f"{field_name}: expected {show(wanted)}, the outcome has none to compare: "
                                     f"{reason}")
            continue
        if field_name == "termination":  # the target's value, in the scenario's words (profile termination_map)
            named = profile.termination_name(actual)
            shown = show(actual) + (f" (named {show(named)} by termination_map)" if named != actual else "")
            findings.compare(field_name, actual is not None and str(wanted) in (str(actual), str(named)),
                             f"expected {show(wanted)}, {turn_label} ended with {shown}")
            continue
        findings.compare(field_name, actual is not None and str(actual) == str(wanted),
                         f"expected {show(wanted)}, {turn_label} ended with {show(actual)}")


def _shown_errors(errors: list[str]) -> str:
    return " / ".join(show(e, 160) for e in errors) if errors else "no error"


def _judge_errors(ctx: CheckContext, last: TurnRecord | None, findings: _Findings) -> None:
    """expect.outcome_error against the last turn, each turn's expect_error against that turn."""
    expected = ctx.scenario.expect.outcome_error
    if expected is not None:
        errors = [e for e in ((last.outcome.error, last.run_error) if last else ()) if e]
        findings.compare("outcome_error", any(expected in e for e in errors),
                         f"expected an error containing {show(expected)}; {_turn_label(last)} has "
                         + _shown_errors(errors))
    for record, declared in _declared_errors(ctx):
        errors = [e for e in (record.outcome.error, record.run_error) if e]
        where = f"turn {record.turn} (session {record.session_id})"
        findings.compare(f"expect_error of {where}", any(declared in e for e in errors),
                         f"expected an error containing {show(declared)}; it has " + _shown_errors(errors))


def _judge_state(ctx: CheckContext, last: TurnRecord | None, findings: _Findings) -> None:
    """expect.state (and state_match: exact) against the last session's final persisted snapshot."""
    trace, expect = ctx.trace, ctx.scenario.expect
    session = last.session_id if last else (trace.persisted[-1].session_id if trace.persisted else None)
    snapshot = trace.final_persisted(session) if session else None
    if snapshot is None:
        findings.problems.append(f"state: no persisted snapshot of the last session ({session}) to compare with")
        return
    where = name_snapshot(snapshot)
    # user:/app: keys live in their own rows; look them up there, un-prefixed, as stored.
    merged = {**snapshot.session_state, **{f"user:{k}": v for k, v in snapshot.user_state.items()},
              **{f"app:{k}": v for k, v in snapshot.app_state.items()}}
    for key, wanted in expect.state.items():
        _judge_state_key(ctx.profile.none_semantics, key, wanted, merged, where, findings)
    if expect.state_match == "exact":
        extra = sorted(k for k in merged if k not in expect.state)
        findings.compare("state (exact)", not extra,
                         f"{where} holds no key beyond the {len(expect.state)} expected" if not extra else
                         f"{where} holds {len(extra)} key(s) the expected state does not: "
                         + ", ".join(f"{k!r} = {show(merged[k], 60)}" for k in extra[:8])
                         + (" ..." if len(extra) > 8 else ""))


def _judge_state_key(none_semantics: str, key: str, wanted: Any, merged: dict[str, Any], where: str,
                     findings: _Findings) -> None:
    if wanted is None and none_semantics == "store":
        # null is "cleared": on a service that stores None (ADK's own), a cleared key holds null.
        findings.compare(f"state {key!r}", merged.get(key) is None,
                         f"must hold no value (absent, or null: the run's service stores None); {where} "
                         + (f"holds {show(merged[key])}" if key in merged else "has none"))
    elif wanted is None:
        findings.compare(f"state {key!r}", key not in merged,
                         f"must be absent; {where} " + (f"holds {show(merged[key])}" if key in merged else "has none"))
    else:
        actual = merged.get(key)
        findings.compare(f"state {key!r}", key in merged and actual == wanted,
                         f"expected {show(wanted)}; {where} holds " + (show(actual) if key in merged else "<absent>"))


def _verdict(findings: _Findings) -> CheckResult:
    met, problems, unjudged = findings.met, findings.problems, findings.unjudged
    if problems:
        return failed(NAME, f"{len(problems)} expectation(s) not met.",
                      problems + [f"(met) {line}" for line in met] + [f"(not judged) {line}" for line in unjudged])
    if not met:
        return not_applicable(NAME, "No expectation could be judged: " + "; ".join(unjudged))
    return passed(NAME, f"All {len(met)} expectation(s) met" + (f"; {len(unjudged)} not judged" if unjudged else "")
                  + ".", met + unjudged)
