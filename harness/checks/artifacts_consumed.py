"""(e) Every artifact whose results were analysed ends ``consumed`` (analysis-consumed semantics)."""

from __future__ import annotations

from ..trace.model import ExecutionRecord
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped, name_event
from .timeline import ExecutionWindow, execution_windows

NAME = "artifacts_consumed"
CONSUMED = "consumed"


def _window_for(record: ExecutionRecord, windows: list[ExecutionWindow],
                executed: list[ExecutionRecord]) -> ExecutionWindow | None:
    """The execution event of ``record``: the one whose delta names it, else the same position in its session."""
    mine = [w for w in windows if w.execution.session_id == record.session_id]
    names = {v for v in (record.artifact_id, record.result_json_path) if v}
    for window in mine:
        if names & {v for v in window.execution.emitted_delta.values() if isinstance(v, str)}:
            return window
    same_session = [r for r in executed if r.session_id == record.session_id]
    position = next((i for i, r in enumerate(same_session) if r is record), None)
    return mine[position] if position is not None and position < len(mine) else None


def _consumed_before_summary(ctx: CheckContext, record: ExecutionRecord, window: ExecutionWindow) -> str | None:
    """Why the artifact was marked consumed too early (before the summary event that analysed it), or None.

    Needs the registry's status after each event (``EventRecord.artifact_statuses``); without it, None.
    """
    run = window.runs[0]
    summary = next((e for e in run.events if ctx.profile.summary_key in e.emitted_delta), run.last)
    first = next((e for e in ctx.trace.events if e.session_id == record.session_id
                  and e.artifact_statuses.get(record.artifact_id) == CONSUMED), None)
    if first is None or first.index >= summary.index:
        return None
    return (f"already 'consumed' right after {name_event(first)}, before {name_event(summary)} wrote the summary "
            f"that analysed it: consumed means analysed, so it may only be marked after the summary")


@check(
    NAME,
    title="Artifact lifecycle: analysed artifacts are consumed",
    why="With the pruning plugin gone, something else must mark artifacts consumed. The reference uses "
        "seed 000's Option 2 (analysis-consumed): an artifact is consumed once results_processor has analysed "
        "its output — not before (the registry's status is read after every event: consumed before the summary "
        "event is too early), and not never.",
    dod_item="000: artifacts still transition to 'consumed' according to the chosen semantics",
)
def artifacts_consumed(ctx: CheckContext) -> CheckResult:
    trace, profile = ctx.trace, ctx.profile
    if not trace.executions:
        return not_applicable(NAME, "The trace has no execution records (the target exposes no artifact registry).")
    windows = execution_windows(trace, profile)
    executed = sorted((r for r in trace.executions if r.status != "pending"), key=lambda r: r.iteration)
    problems: list[str] = []
    consumed = 0
    for record in sorted(trace.executions, key=lambda r: (r.session_id, r.iteration)):
        label = f"artifact {record.artifact_id} (session {record.session_id}, iteration {record.iteration})"
        window = _window_for(record, windows, executed) if record.status != "pending" else None
        if window is not None and window.runs:
            if record.status == CONSUMED:
                consumed += 1
                if (early := _consumed_before_summary(ctx, record, window)) is not None:
                    problems.append(f"{label}: {early}")
            else:
                problems.append(f"{label}: status {record.status!r} although {name_event(window.runs[0].first)} "
                                f"processed its execution {name_event(window.execution)}; expected 'consumed'")
        elif record.status == CONSUMED:
            where = f"after its execution {name_event(window.execution)}" if window else "(no execution event found)"
            problems.append(f"{label}: status 'consumed' but no {profile.results_processor} run followed "
                            f"{where}; analysis-consumed semantics marks it only after analysis")
    if problems:
        return failed(NAME, f"{len(problems)} artifact(s) break the analysis-consumed lifecycle.", capped(problems))
    return passed(NAME, f"{consumed} analysed artifact(s) consumed; {len(trace.executions) - consumed} not analysed "
                        f"and not consumed.")
