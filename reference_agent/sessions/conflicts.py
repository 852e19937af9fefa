"""Bounded, logged retries of statements that lost a Delta write conflict.

Only for statements that are safe to run again: a statement that FAILED with a conflict did not commit, and
the ones retried here either re-check their own guard (a compare-and-set ``UPDATE ... WHERE version =``, an
insert-if-absent ``MERGE``) or are idempotent (``DELETE``, ``CREATE TABLE IF NOT EXISTS``). The session
service says which statement is which.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from reference_agent.storage.sql import WriteConflictError

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class ConflictRetry:
    attempts: int = 4  # tries in all, the first included
    initial_s: float = 0.05
    factor: float = 2.0
    sleep: Callable[[float], None] = field(default=time.sleep)

    def delays(self) -> list[float]:
        return [self.initial_s * self.factor ** n for n in range(max(0, self.attempts - 1))]

    def run(self, what: str, statement: Callable[[], T]) -> T:
        """``statement()``, run again after each ``WriteConflictError`` until ``attempts`` are used up."""
        delays = self.delays()
        for attempt, delay in enumerate([*delays, None], start=1):
            try:
                return statement()
            except WriteConflictError as exc:
                if delay is None or not exc.retryable:  # not retryable: its transaction was aborted (DuckDB)
                    raise
                logger.warning("%s lost a write conflict (%s), attempt %d of %d; retrying in %.2f s",
                               what, exc.error_class, attempt, self.attempts, delay)
                self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover
