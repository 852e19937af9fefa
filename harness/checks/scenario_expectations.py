"""The scenario's own expectations: executions, final answer, termination, state fragments, error."""

from __future__ import annotations

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
    trace, profile, expect = ctx.trace, ctx.profile, ctx.scenario.expect
    if (expect.executions is None and expect.final_answer is None and expect.termination is None
            and not expect.state and expect.outcome_error is None and not list(_declared_errors(ctx))):
        return not_applicable(NAME, "The scenario's expect block sets no executions, final_answer, termination, "
                                    "state or outcome_error.")
    met: list[str] = []
    problems: list[str] = []

    def compare(what: str, ok: bool, detail: str) -> None:
        (met if ok else problems).append(f"{what}: {detail}")

    unjudged: list[str] = []
    if expect.executions is not None and (reason := executions_unmapped(profile)):
        unjudged.append(f"executions: expected {expect.executions}, not counted: {reason}")
    elif expect.executions is not None:
        count = len(executions(trace, profile))
        compare("executions", count == expect.executions, f"expected {expect.executions}, the trace has {count}")
    last = max(trace.turns, key=lambda t: t.turn) if trace.turns else None
    turn_label = f"turn {last.turn} (session {last.session_id})" if last else "no turn"
    for field in ("final_answer", "termination"):
        wanted = getattr(expect, field)
        if wanted is None:
            continue
        actual = getattr(last.outcome, field) if last else None
        key_field = "termination_key" if field == "termination" else "final_answer_key"
        if actual is None and (reason := profile.unmapped(key_field)):
            unjudged.append(f"{field}: expected {show(wanted)}, the outcome has none to compare: {reason}")
            continue
        if field == "termination":  # the target's value, in the scenario's words (profile termination_map)
            named = profile.termination_name(actual)
            shown = show(actual) + (f" (named {show(named)} by termination_map)" if named != actual else "")
            compare(field, actual is not None and str(wanted) in (str(actual), str(named)),
                    f"expected {show(wanted)}, {turn_label} ended with {shown}")
            continue
        compare(field, actual is not None and str(actual) == str(wanted),
                f"expected {show(wanted)}, {turn_label} ended with {show(actual)}")
    if expect.outcome_error is not None:
        errors = [e for e in ((last.outcome.error, last.run_error) if last else ()) if e]
        compare("outcome_error", any(expect.outcome_error in e for e in errors),
                f"expected an error containing {show(expect.outcome_error)}; {turn_label} has "
                + (" / ".join(show(e, 160) for e in errors) if errors else "no error"))
    for record, declared in _declared_errors(ctx):
        errors = [e for e in (record.outcome.error, record.run_error) if e]
        where = f"turn {record.turn} (session {record.session_id})"
        compare(f"expect_error of {where}", any(declared in e for e in errors),
                f"expected an error containing {show(declared)}; it has "
                + (" / ".join(show(e, 160) for e in errors) if errors else "no error"))
    if expect.state or expect.state_match == "exact":
        session = last.session_id if last else (trace.persisted[-1].session_id if trace.persisted else None)
        snapshot = trace.final_persisted(session) if session else None
        if snapshot is None:
            problems.append(f"state: no persisted snapshot of the last session ({session}) to compare with")
        else:
            where = name_snapshot(snapshot)
            # user:/app: keys live in their own rows; look them up there, un-prefixed, as stored.
            merged = {**snapshot.session_state, **{f"user:{k}": v for k, v in snapshot.user_state.items()},
                      **{f"app:{k}": v for k, v in snapshot.app_state.items()}}
            for key, wanted in expect.state.items():
                if wanted is None and profile.none_semantics == "store":
                    # null is "cleared": on a service that stores None (ADK's own), a cleared key holds null.
                    compare(f"state {key!r}", merged.get(key) is None,
                            f"must hold no value (absent, or null: the run's service stores None); {where} "
                            + (f"holds {show(merged[key])}" if key in merged else "has none"))
                elif wanted is None:
                    compare(f"state {key!r}", key not in merged,
                            f"must be absent; {where} " + (f"holds {show(merged[key])}"
                                                           if key in merged else "has none"))
                else:
                    actual = merged.get(key)
                    compare(f"state {key!r}", key in merged and actual == wanted,
                            f"expected {show(wanted)}; {where} holds "
                            + (show(actual) if key in merged else "<absent>"))
            if expect.state_match == "exact":
                extra = sorted(k for k in merged if k not in expect.state)
                compare("state (exact)", not extra,
                        f"{where} holds no key beyond the {len(expect.state)} expected" if not extra else
                        f"{where} holds {len(extra)} key(s) the expected state does not: "
                        + ", ".join(f"{k!r} = {show(merged[k], 60)}" for k in extra[:8])
                        + (" ..." if len(extra) > 8 else ""))
    if problems:
        return failed(NAME, f"{len(problems)} expectation(s) not met.",
                      problems + [f"(met) {line}" for line in met] + [f"(not judged) {line}" for line in unjudged])
    if not met:
        return not_applicable(NAME, "No expectation could be judged: " + "; ".join(unjudged))
    return passed(NAME, f"All {len(met)} expectation(s) met" + (f"; {len(unjudged)} not judged" if unjudged else "")
                  + ".", met + unjudged)
