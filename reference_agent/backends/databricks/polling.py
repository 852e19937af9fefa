"""Backoff for polling a statement or a job run: the delays, not the sleeping.

The caller sleeps (and injects the sleep), so replay can stub waiting out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.5
    factor: float = 1.5
    max_s: float = 10.0

    def delays(self) -> Iterator[float]:
        """``initial_s``, then times ``factor`` each poll, capped at ``max_s``; endless."""
        delay = self.initial_s
        while True:
            yield delay
            delay = min(self.max_s, delay * self.factor)
