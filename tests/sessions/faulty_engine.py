"""A DuckDB engine without transactions (like Databricks) that fails or conflicts on chosen statements."""

from __future__ import annotations

import contextlib
import re

from reference_agent.storage import DuckDBEngine, WriteConflictError


class InjectedFailure(RuntimeError):
    """The statement did not run: the client died, or the statement failed."""


class FaultyEngine:
    """Wraps a DuckDB engine; each statement commits alone (``transaction()`` is a no-op, as on Databricks).

    * ``fail_from``: the statement with this 0-based index (counted from arming) and every one after it fail
      without running, as if the process died there.
    * ``conflict_on``: regex -> times: matching statements raise ``WriteConflictError`` (not run) that often.
    """

    def __init__(self, inner: DuckDBEngine) -> None:
        self.inner, self.dialect = inner, inner.dialect
        self.fail_from: int | None = None
        self.conflict_on: dict[str, int] = {}
        self.conflict_class = "DELTA_CONCURRENT_APPEND"
        self.statements: list[str] = []

    def execute(self, sql, params=None):
        index = len(self.statements)
        self.statements.append(" ".join(sql.split()))
        if self.fail_from is not None and index >= self.fail_from:
            raise InjectedFailure(f"injected failure at statement {index}: {sql[:60]}")
        for pattern, times in list(self.conflict_on.items()):
            if times > 0 and re.search(pattern, sql):
                self.conflict_on[pattern] = times - 1
                raise WriteConflictError(f"[{self.conflict_class}] injected conflict", error_class=self.conflict_class)
        return self.inner.execute(sql, params)

    def transaction(self):
        return contextlib.nullcontext()

    def close(self):
        self.inner.close()
