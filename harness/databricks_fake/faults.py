"""Fault switches of the fake workspace; flip them on ``FakeWorkspace.faults`` at any time."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Faults:
    # Every /api/ call answers 401 (an expired or revoked token). /.well-known stays public, as on a workspace.
    expired_token: bool = False
    # New statements stay PENDING (warehouse starting) for this many GET polls before they run.
    warehouse_pending_polls: int = 0
    # Submitted runs do not execute and end TERMINATED/FAILED with this text as get-output error_trace.
    fail_runs_with: str | None = None
    # Submitted runs do not execute and end with (termination code, message): a code of
    # harness.databricks_fake.jobs.ENDINGS, e.g. ("INTERNAL_ERROR", "Cluster ... terminated"), or "TIMEDOUT".
    end_runs_with: tuple[str, str] | None = None
    # Submitted runs stay PENDING ("waiting for compute") until cancelled.
    runs_stay_pending: bool = False
    # GET/HEAD of /Volumes paths matching this regex answer 404 (e.g. r"/result_[^/]*\.json$").
    files_404: str | None = None
    # SQL statements whose text matches a key (regex, searched) FAIL as Delta write conflicts: the value is the error
    # class (DELTA_CONCURRENT_APPEND, DELTA_CONCURRENT_DELETE_READ, ...). Each entry fires `conflicts_per_match`
    # times, then removes itself (so a retry can succeed). The statement is not run, as a lost Delta commit.
    conflict_on: dict[str, str] = field(default_factory=dict)
    conflicts_per_match: int = 1
    # After this many more SQL statements have run, every later one FAILS without running (a client that died
    # between statements: nothing else reaches the tables). None = off.
    fail_statements_after: int | None = None
    # The next SQL statement matching this regex FAILS without running (then the switch clears itself).
    fail_statement_matching: str | None = None
