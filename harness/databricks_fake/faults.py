"""Fault switches of the fake workspace; flip them on ``FakeWorkspace.faults`` at any time."""

from __future__ import annotations

from dataclasses import dataclass


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
