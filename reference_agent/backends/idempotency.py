"""One delegation, one execution: the idempotency token and the result a retry adopts.

A ``JobRequest`` that names its ``delegation_id`` (the artifact id the analyst's
delegation registered) is idempotent across a crash and a retry of the same
delegation:

* a result JSON that already names this delegation's artifact (written whole by
  an earlier attempt: the executor and the runners write it atomically) is
  adopted, and the code is not run again;
* on Databricks, ``runs/submit`` carries ``idempotency_token(request)``, so a
  submit retried after a crash between the submit and the result returns the
  run the first attempt started instead of starting a second one (Jobs API:
  "Databricks guarantees that exactly one run is launched with that idempotency
  token"; at most 64 characters).

A request without ``delegation_id`` keeps the old rule: any result already at
the path is an earlier attempt's and is removed before the run.
"""

from __future__ import annotations

import hashlib
import posixpath
from typing import Any

from ..executor.result import STATUSES

TOKEN_PREFIX = "rlm-jobb-"
TOKEN_MAX_CHARS = 64  # the Jobs API's limit on idempotency_token


def idempotency_token(*, run_id: str, iteration: int, delegation_id: str | None) -> str | None:
    """A token stable across a crash and a retry of one delegation (session, iteration, artifact); None without one.

    Hashed, because a session id and an artifact id together can pass the API's 64 characters.
    """
    if not delegation_id:
        return None
    digest = hashlib.sha256(f"{run_id}\0{iteration}\0{delegation_id}".encode("utf-8")).hexdigest()
    token = TOKEN_PREFIX + digest[:40]
    assert len(token) <= TOKEN_MAX_CHARS
    return token


def is_whole_result(data: Any) -> bool:
    """A result JSON Job_B (or a runner) finished writing: an object with a known ``status``."""
    return isinstance(data, dict) and data.get("status") in STATUSES


def names_artifact(result: dict[str, Any], artifact_path: str) -> bool:
    """The result was written for this artifact file (compared by name: the executor may record a local path)."""
    recorded = str(result.get("artifact_path") or "")
    return bool(recorded) and posixpath.basename(recorded.replace("\\", "/")) == posixpath.basename(artifact_path)


def adoptable(result: Any, *, artifact_path: str, delegation_id: str | None) -> bool:
    """An earlier attempt's whole result for this very delegation: adopt it instead of running the code again."""
    return bool(delegation_id) and is_whole_result(result) and names_artifact(result, artifact_path)


def adopted_state(result: dict[str, Any]) -> str:
    """The ``JobOutcome.runner_state`` of an adopted result: SUCCESS when Job_B wrote it, else how the run ended."""
    if result.get("written_by") != "runner":
        return "SUCCESS"
    return "TIMEDOUT" if result.get("status") == "timeout" else "FAILED"
