"""One scenario's crash matrix: an uncrashed run, then per crash point a killed run and a recovery, each in a
process of its own (``python -m harness.crash.child``), judged by ``checks.py``.

Cost: one child per run, so (1 + 2 x points) scenario runs, each paying a Python start and the target's build
(~2-3 s for the reference agent); ``jobs`` runs points side by side.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..checks.base import CheckResult, Status
from ..llm.modes import LlmMode
from ..result import ScenarioResult
from ..run.options import RunOptions
from ..scenario.models import Scenario
from .checks import CombinedHistory, WorkspaceRuns, crash_checks
from .journal import read_journal
from .points import CrashPoint, Kind, crash_points, in_run_order, point_of, submitted_points
from .recovery import RecoveryNotRun, recovery_scenario, resumed_invocation, sessions_touched
from .resume import Resume
from .workspace import CrashWorkspace, JobRuns, RunSubmitted, crash_workspace

CHILD_TIMEOUT_S = 300
# What a target whose session service keeps nothing across processes (an App fresh from `init` runs on ADK's
# InMemorySessionService) crashes on instead: ADK's durable service, as such an App is deployed. An explicit
# --session-service adk-memory stays n/a.
DURABLE_FALLBACK = "adk-sqlite"
EXPLICIT_IN_MEMORY = "adk-memory"


@dataclass
class PointResult:
    point: CrashPoint
    recovery: str
    checks: tuple[CheckResult, ...] = ()
    error: str | None = None  # the point could not be judged (the child was not killed, the recovery did not run)
    not_applicable: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None or any(c.failed for c in self.checks)


@dataclass
class CrashReport:
    scenario: str
    target: str = ""
    session_service: str = ""
    points: list[PointResult] = field(default_factory=list)
    not_applicable: str | None = None
    error: str | None = None
    note: str | None = None  # how the matrix ran other than asked (the durable fallback), said with the results
    uncrashed: ScenarioResult | None = field(default=None, repr=False)  # the reference run (not in crash.json)
    uncrashed_failures: list[str] = field(default_factory=list)  # checks the uncrashed run fails (said, not judged)
    first_run_s: float = 0.0
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None or any(p.failed for p in self.points)


def _run_child(folder: Path, name: str, scenario: Scenario, options: RunOptions, *, kill: CrashPoint | None,
               read_sessions: list[tuple[str, str]] = (), probe: bool = False, resume: Resume | None = None,
               started: Any = None,
               ) -> tuple[int, dict[str, Any] | None, Path, str]:
    """Run ``scenario`` in a child process on ``options.work_dir``: (exit code, what it wrote, journal, stderr).
    ``started(process, journal)`` is told of the process once it runs (the workspace kills it at a submit)."""
    spec, out, journal = folder / f"{name}.spec", folder / f"{name}.out", folder / f"{name}.journal.jsonl"
    for stale in (out, journal):  # a run of the same name before (the durable fallback's second first run)
        stale.unlink(missing_ok=True)
    spec.write_bytes(pickle.dumps({"scenario": scenario, "options": options, "journal": str(journal), "kill": kill,
                                   "read_sessions": list(read_sessions), "out": str(out),
                                   "probe": probe, "resume": resume}))
    with subprocess.Popen([sys.executable, "-m", "harness.crash.child", str(spec)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        if started is not None:
            started(process, journal)
        try:
            _, stderr = process.communicate(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    wrote = pickle.loads(out.read_bytes()) if out.exists() else None
    return process.returncode, wrote, journal, stderr


def backend_cannot_crash(options: RunOptions) -> str | None:
    """Why the run's backend keeps nothing a recovery could read (its plugin says so), or None."""
    if options.backend == "local":
        return None
    from ..targets.plugins import backend

    declared = backend(options.backend).crash_matrix
    return declared(options) if declared is not None else None


def crash_matrix(scenario: Scenario, options: RunOptions, *, kinds: tuple[Kind, ...] = ("after",),
                 recovery: str | None = None, jobs: int = 1, keep: Path | None = None,
                 only: list[tuple[Kind, int | str]] | None = None, max_points: int | None = None) -> CrashReport:
    """The crash matrix of ``scenario`` (scripted model); ``recovery`` overrides the profile's; ``keep`` keeps the
    work folders there; ``only`` runs these points instead of every point of ``kinds``: (kind, event index, or the
    author of the first event it names); ``max_points`` keeps the first N points in run order (a quick look)."""
    started = time.perf_counter()
    report = CrashReport(scenario=scenario.name)
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"rlm-crash-{scenario.name}-", dir=keep))
    options = replace(options, llm_mode=LlmMode.SCRIPTED, record=False, observer=None)
    report.not_applicable = backend_cannot_crash(options)
    if report.not_applicable:
        shutil.rmtree(base, ignore_errors=True)
        report.seconds = time.perf_counter() - started
        return report
    try:
        code, wrote, stderr, kept, runs = _uncrashed(base, scenario, options)
        if not kept and options.session_service != EXPLICIT_IN_MEMORY:
            service = wrote["result"].session_service
            options = replace(options, session_service=DURABLE_FALLBACK)
            report.note = (f"the target's session service {service} kept nothing across processes (a fresh process "
                           f"found none of the sessions the uncrashed run stored): crashed on ADK's "
                           f"DatabaseSessionService (sqlite, --session-service {DURABLE_FALLBACK}) instead; name a "
                           f"store of yours that outlives its process with --session-service (or session-service in "
                           f"the project) to crash on it")
            shutil.rmtree(base / "uncrashed", ignore_errors=True)
            code, wrote, stderr, kept, runs = _uncrashed(base, scenario, options)
        report.first_run_s = time.perf_counter() - started
        if wrote is None:
            report.error = f"the uncrashed run's process ended with exit {code}: {stderr[-2000:]}"
            return report
        result: ScenarioResult = wrote["result"]
        report.target, report.session_service, report.uncrashed = result.target, result.session_service, result
        if result.error or result.trace is None:
            report.error = f"the uncrashed run cannot be the reference: {result.error}"
            return report
        report.uncrashed_failures = [c.name for c in result.checks if c.failed]
        if not kept:
            report.not_applicable = (f"the session service {result.session_service} keeps nothing across "
                                     f"processes (a fresh process found none of the sessions the uncrashed run "
                                     f"stored): there is nothing to recover after a crash (leave --session-service "
                                     f"unset to crash on ADK's sqlite service, or name a store of yours)")
            return report
        profile = wrote["profile"]
        how = recovery or profile.recovery
        if how == "resume" and wrote.get("cannot_resume"):
            report.not_applicable = f"recovery 'resume': {wrote['cannot_resume']}"
            return report
        submitted = submitted_points(result.trace, runs.after_events)
        asks_submits = any(kind == "submitted" for kind, _ in only) if only is not None else set(kinds) == {
            "submitted"}
        if asks_submits and not runs.seen:
            report.not_applicable = ("no 'submitted' crash point: on this backend the harness does not keep the "
                                     "workspace the run submits its jobs to (the reference plugin's databricks "
                                     "backend keeps its fake; a local executor has no submit)")
            return report
        points = in_run_order(crash_points(result.trace, kinds), submitted if "submitted" in kinds else [],
                              runs.after_events if "submitted" in kinds else []) if only is None else [
            _submitted_point(submitted, at) if kind == "submitted" else
            point_of(result.trace.events, kind=kind, **({"author": at} if isinstance(at, str) else {"index": at}))
            for kind, at in only]
        points = points[:max_points] if max_points is not None else points

        def one(point: CrashPoint) -> PointResult:
            return _one_point(base, scenario, options, result, profile, point, how, runs.ledger)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            report.points = list(pool.map(one, points))
        return report
    finally:
        report.seconds = time.perf_counter() - started
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _uncrashed(base: Path, scenario: Scenario, options: RunOptions
               ) -> tuple[int, dict[str, Any] | None, str, bool, JobRuns]:
    """The uncrashed run, whether its store kept anything across processes, and the job runs its workspace saw
    (the probe reads the store on the same workspace)."""
    first = base / "uncrashed"
    first.mkdir(exist_ok=True)
    with crash_workspace(options, first) as workspace:
        code, wrote, _, stderr = _run_child(base, "uncrashed", scenario,
                                            replace(workspace.options, work_dir=first / "work"), kill=None,
                                            started=workspace.child("uncrashed run", None))
        kept = _keeps_across_processes(base, scenario, workspace.options) if _ran(wrote) else True
        return code, wrote, stderr, kept, workspace.job_runs()


def _ran(wrote: dict[str, Any] | None) -> bool:
    return wrote is not None and not wrote["result"].error and wrote["result"].trace is not None


def _keeps_across_processes(base: Path, scenario: Scenario, options: RunOptions) -> bool:
    """Whether a fresh process, building the target on the uncrashed run's folder, finds a session that run stored
    (or fails reading one: session_readable_prefix says so). A probe, not a class list: a user's service
    that subclasses ADK's in-memory one, or keeps a dict, is found out the same way as ADK's."""
    sessions = [(spec.user, scenario.session_id(i)) for i, spec in enumerate(scenario.sessions)]
    _, wrote, _, _ = _run_child(base, "probe", scenario, replace(options, work_dir=base / "uncrashed" / "work"),
                                kill=None, read_sessions=sessions, probe=True)
    read = (wrote or {}).get("reads", {}).get("sessions", {})
    return wrote is None or any(found is not None for found in read.values())


def _submitted_point(submitted: list[CrashPoint], at: int | str) -> CrashPoint:
    if isinstance(at, int) and 0 <= at < len(submitted):
        return submitted[at]
    raise LookupError(f"the uncrashed run submitted {len(submitted)} job run(s): there is no 'submitted' point {at!r} "
                      f"(a run's index, from 0)")


def _one_point(base: Path, scenario: Scenario, options: RunOptions, uncrashed: ScenarioResult, profile: Any,
               point: CrashPoint, how: str, uncrashed_runs: list[RunSubmitted] = ()) -> PointResult:
    folder = base / f"{point.kind}{point.index}"
    folder.mkdir()
    with crash_workspace(options, folder) as workspace:  # the killed run's and its recovery's
        return _point_on(folder, scenario, workspace, uncrashed, profile, point, how, list(uncrashed_runs))


def _point_on(folder: Path, scenario: Scenario, workspace: CrashWorkspace, uncrashed: ScenarioResult, profile: Any,
              point: CrashPoint, how: str, uncrashed_runs: list[RunSubmitted]) -> PointResult:
    started = time.perf_counter()
    outcome = PointResult(point=point, recovery=how)
    work = replace(workspace.options, work_dir=folder / "work")
    try:
        code, _, journal_path, stderr = _run_child(folder, "crashed", scenario, work, kill=point,
                                                   started=workspace.child("crashed run", point))
        journal = read_journal(journal_path)
        if code != -9 or journal.killing is None:
            outcome.error = (f"the crashed run was not killed at {point.label} (exit {code}): the run did not pass "
                             f"the point again (is the scenario deterministic?) {stderr[-1500:]}")
            return outcome
        try:
            recovering = recovery_scenario(scenario, crashed_turn=point.turn, journal=journal, recovery=how)
        except RecoveryNotRun as exc:
            outcome.not_applicable = str(exc)
            return outcome
        resume = resumed_invocation(scenario, crashed_turn=point.turn, journal=journal) if how == "resume" else None
        code, wrote, _, stderr = _run_child(folder, "recovery", recovering, work, kill=None,
                                            read_sessions=sessions_touched(scenario, point.turn), resume=resume,
                                            started=workspace.child("recovery", None))
        workspace.release()  # a run still held executes all the same
        if wrote is None:
            outcome.error = f"the recovery's process ended with exit {code}: {stderr[-2000:]}"
            return outcome
        history = CombinedHistory(scenario=scenario, uncrashed=uncrashed.trace, profile=wrote["profile"] or profile,
                                  point=point, journal=journal, reads=wrote["reads"], recovery=wrote["result"],
                                  recovery_scenario=recovering, resumed=resume.invocation_id if resume else None,
                                  uncrashed_journal=read_journal(folder.parent / "uncrashed.journal.jsonl"),
                                  recovery_journal=read_journal(folder / "recovery.journal.jsonl"),
                                  workspace_runs=WorkspaceRuns(uncrashed_runs, workspace.ledger())
                                  if workspace.sees_runs else None)
        outcome.checks = crash_checks(history)
        return outcome
    finally:
        outcome.seconds = time.perf_counter() - started


def point_row(p: PointResult) -> dict[str, Any]:
    return {"point": p.point.label, "kind": p.point.kind, "index": p.point.index, "author": p.point.author,
            "recovery": p.recovery, "failed": p.failed, "error": p.error, "not_applicable": p.not_applicable,
            "seconds": round(p.seconds, 2),
            "checks": [{"name": c.name, "status": c.status.value, "explanation": c.explanation,
                        "evidence": list(c.evidence)} for c in p.checks if c.status is not Status.PASS or
                       not c.name.startswith("recovery:")]}
