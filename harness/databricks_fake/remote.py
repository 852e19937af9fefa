"""A ``FakeWorkspace`` another process owns, as a run's process reaches it.

A crash matrix's parent process keeps one fake per crash point, so that what the killed run wrote there (tables,
volume files, job runs) is there for its recovery; each run's process gets the fake's ``FakeAddress`` and talks to
it over HTTP like any client. ``RemoteFake`` is what such a process holds instead of the fake itself: its host and
token, and ``set_job_env`` over the fake's own route (Job_B's model key and endpoint are the run process's).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass

JOB_ENV_ROUTE = "/fake/job-env"


@dataclass(frozen=True)
class FakeAddress:
    host: str
    token: str


class RemoteFake:
    def __init__(self, address: FakeAddress) -> None:
        self.host = address.host
        self.token = address.token

    def set_job_env(self, values: dict[str, str | None]) -> None:
        """Set (None: unset) variables of every later Job_B run's environment on the fake."""
        request = urllib.request.Request(self.host + JOB_ENV_ROUTE, data=json.dumps(values).encode("utf-8"),
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  "Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - the fake on loopback
            answer.read()
