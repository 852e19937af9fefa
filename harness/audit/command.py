"""``rlm-conformance audit STORE``: the audit checks over every stored session, with the reports ``run`` writes.

One session is one row (a ``ScenarioResult`` whose name is ``app/user/session``), one audit check one column,
so the same renderers write the console summary, Markdown, JUnit, JSON and HTML. Sessions are read and judged
one at a time; only their check results are kept for the reports. Exit codes: 0 no gating check failed, 1 a
gating check (``--fail-on``, default all) failed, 2 the store, a flag or the profile is unusable.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError

if TYPE_CHECKING:
    from rich.console import Console

    from ..result import RunReport, ScenarioResult
    from ..targets.profile import TargetProfile
    from .model import StoredSession


def add_audit_parser(commands: Any) -> None:
    """Add ``audit`` to the CLI's sub-commands (``commands``: what ``add_subparsers`` returned)."""
    audit = commands.add_parser(
        "audit", help="audit the sessions persisted in a session store (read-only)",
        description="Read a session store (read-only, one session at a time) and run the storage-level state "
                    "checks on every session: no temp: key or null persisted, summaries after executions, deltas "
                    "within their author's contract, the byte budget, event order and sequence, state equal to the "
                    "fold of the events. Exit 0 when no gating check failed, 1 when one did, 2 on a bad STORE, "
                    "flag or profile. See docs/audit.md.")
    audit.add_argument("store", metavar="STORE",
                       help="sqlite:///path.db or any SQLAlchemy URL; duckdb:///path or a DuckDB/SQLite file path; "
                            "databricks://CATALOG.SCHEMA (DATABRICKS_HOST, DATABRICKS_TOKEN or "
                            "DATABRICKS_CONFIG_PROFILE, DATABRICKS_WAREHOUSE_ID)")
    audit.add_argument("--profile", metavar="FILE",
                       help="target profile YAML naming the agent's roles and keys, or a target plugin's name "
                            "such as 'reference' (default: profile in [tool.rlm-conformance], else the neutral "
                            "profile: checks that need one are n/a)")
    audit.add_argument("--app", metavar="APP", help="only sessions of this app_name")
    audit.add_argument("--user", metavar="USER", help="only sessions of this user_id")
    audit.add_argument("--session", metavar="ID", help="only this session id")
    audit.add_argument("--since", metavar="TIME",
                       help="only sessions updated at or after TIME (epoch seconds or ISO date-time, UTC by default)")
    audit.add_argument("--until", metavar="TIME", help="only sessions updated at or before TIME")
    audit.add_argument("--fail-on", metavar="CHECK[,CHECK]", default="all",
                       help="checks whose failure makes the exit code 1 (default: %(default)s); the others are "
                            "reported but do not gate")
    audit.add_argument("--reports", metavar="DIR",
                       help="also write the reports (Markdown, JUnit, HTML, JSON) into DIR")
    audit.add_argument("--json", action="store_true",
                       help="print the JSON report on stdout instead of the summary")
    audit.add_argument("--wide", action="store_true",
                       help="print the session x check matrix (one column per check, as wide as it needs) "
                            "instead of one line per session")


def _gating(value: str) -> tuple[str, ...]:
    from .checks import AUDIT_CHECK_NAMES

    names = [part.strip() for part in value.split(",") if part.strip()]
    if names == ["all"]:
        return AUDIT_CHECK_NAMES
    unknown = [n for n in names if n not in AUDIT_CHECK_NAMES]
    if unknown or not names:
        raise HarnessError(f"--fail-on {value!r}: unknown check(s) {', '.join(unknown) or '(none given)'}. "
                           f"Use 'all' or a comma-separated list of: {', '.join(AUDIT_CHECK_NAMES)}.")
    return tuple(names)


def _profile(value: str | None) -> tuple[TargetProfile, str]:
    from ..project_config import load_project_config
    from ..targets.profile import TargetProfile, load_profile

    if value is None:
        configured = load_project_config().profile
        if configured is None:
            return TargetProfile(), "neutral"
        return load_profile(configured), str(configured)
    from ..targets.plugins import plugins

    plugin = plugins().get(value)
    if plugin is not None and plugin.profile is not None:  # a target plugin's name: its own profile
        return plugin.profile(), value
    return load_profile(Path(value)), value


def _row(stored: StoredSession, checks: list, where: str, seconds: float) -> ScenarioResult:
    from ..result import ScenarioResult

    return ScenarioResult(scenario=stored.key, description=f"{len(stored.events)} events, {stored.layout} layout",
                          target=stored.app_name, llm_mode="audit", session_service=where,
                          checks=tuple(checks), trace=None, duration_s=seconds)


def _unowned(findings: list, where: str) -> list[ScenarioResult]:
    """One row per key that rows no session owns were found under (stores/integrity.py), its check failing."""
    from ..checks.base import failed
    from ..result import ScenarioResult

    explanations = {
        "store_integrity": "Event rows whose session row is gone.",
        "scope_rows_owned": "State rows of an app or user with no session row: left by a failed write, or kept "
                            "after every session of that user was deleted (ADK keeps user state then; leave this "
                            "check out of --fail-on if that is how the store is used).",
    }
    grouped: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for finding in findings:
        grouped.setdefault((finding.key, finding.check), []).append(finding.evidence)
    return [ScenarioResult(scenario="/".join(key) + ("" if len(key) == 3 else " (no session)"),
                           description="rows no session owns", target=key[0], llm_mode="audit",
                           session_service=where, checks=(failed(check, explanations[check], evidence),), trace=None,
                           duration_s=0.0)
            for (key, check), evidence in grouped.items()]


def audit_store(store_spec: str, profile: TargetProfile, selection: object) -> tuple[RunReport, str]:
    """Every selected session of the store judged by the audit checks; returns the report and the layout."""
    from ..result import RunReport, ScenarioResult
    from .checks import run_audit_checks
    from .stores import open_store

    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rows = []

    def unreadable(key: tuple[str, str, str], message: str) -> None:  # an error row; the others are still judged
        rows.append(ScenarioResult(scenario="/".join(key), description="its rows cannot be read", target=key[0],
                                   llm_mode="audit", session_service=store.where, checks=(), trace=None,
                                   duration_s=0.0, error=message))

    with open_store(store_spec) as store:
        for stored in store.sessions(selection, on_unreadable=unreadable):  # type: ignore[arg-type]
            began = time.perf_counter()
            checks = run_audit_checks(stored, profile)
            rows.append(_row(stored, checks, store.where, time.perf_counter() - began))
        rows += _unowned(store.unowned_rows(selection), store.where)  # type: ignore[arg-type]
        layout = f"{store.layout.name} ({store.layout.title})"
    machine = f"{platform.node() or 'unknown'} (Python {platform.python_version()})"
    return RunReport(results=tuple(rows), started_at=started, machine=machine, tool_version=_version(),
                     extra={"command": "audit", "store": store.where, "layout": layout}, subject="session"), layout


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0+unknown"


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    import sys

    from ..checks.base import Status
    from ..report import render_json, render_terminal, write_reports
    from .checks import AUDIT_CHECK_NAMES
    from .stores import SessionFilter, parse_time

    gating = _gating(args.fail_on)
    selection = SessionFilter(app=args.app, user=args.user, session=args.session,
                              since=parse_time(args.since, "--since") if args.since else None,
                              until=parse_time(args.until, "--until") if args.until else None)
    profile, profile_name = _profile(args.profile)
    report, _ = audit_store(args.store, profile, selection)
    report.extra["profile"] = profile_name
    report.extra["fail_on"] = "all" if gating == AUDIT_CHECK_NAMES else ",".join(gating)
    if args.json:
        sys.stdout.write(render_json(report))
    else:
        render_terminal(report, console, wide=args.wide,
                        details_in=str(Path(args.reports) / "conformance.html") if args.reports
                        else "the reports (audit --reports DIR)")
        console.print(f"Audited {report.extra['store']} ({report.extra['layout']}) with the {profile_name} profile; "
                      f"gating checks: {report.extra['fail_on']}.", markup=False, style="dim")
    if args.reports:
        written = write_reports(report, args.reports, ("junit", "markdown", "html", "json"), titles=_titles())
        if not args.json:
            console.print("Reports written: " + ", ".join(str(p) for p in written.values()), markup=False)
    gated = [(r.scenario, c.name) for r in report.results for c in r.checks
             if c.status is Status.FAIL and c.name in gating]
    unreadable = [r for r in report.results if r.error is not None]
    return 1 if gated or unreadable else 0


AUDIT_ONLY_TITLES = {
    "store_integrity": "Each session, event, app and user row stored once; no event past its session's version "
                       "or without its session",
    "scope_rows_owned": "Every app and user state row belongs to an app or user with a session",
    "events_ordered": "Events are in order, ids unique, sequence and version consistent",
    "state_matches_events": "The session state equals the fold of its events' deltas",
}


def _titles() -> dict[str, str]:
    """The run-time check's title where the audit check shares its name, else the audit's own."""
    from ..checks import registered_checks
    from .checks import AUDIT_CHECK_NAMES

    known = registered_checks()
    return {name: known[name].title if name in known else AUDIT_ONLY_TITLES.get(name, name.replace("_", " "))
            for name in AUDIT_CHECK_NAMES}
