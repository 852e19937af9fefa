"""Traces on disk while a run goes on, so the CLI's memory does not grow with the number of scenarios.

A run's results stay in memory for the summary, but each with a *light* trace: its turns (the crashes the
reports list), model route and plugins, without the bulky lists (events, model requests and responses,
executions, persisted snapshots, live states, token counts). The full trace is pickled to a temporary file as
the result arrives, and read back one scenario at a time by the two reports that show it whole (JSON: the
trace; HTML: the state-delta timeline) through ``RunReport.trace_at``. The files go when the run ends.

With ``pieces``, each result's parts of the reports (its JSON entry, HTML section, JUnit test cases) are rendered
as it arrives too — while the workers run the next scenarios, where the parent is otherwise idle — and the reports
read them back (``RunReport.piece_at``) instead of rendering them after the last result.
"""

from __future__ import annotations

import dataclasses
import functools
import pickle
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

from ..result import ScenarioResult
from ..trace.model import Trace

BULKY = ("events", "llm_requests", "llm_responses", "executions", "persisted", "live_states", "token_counts")


class TraceSpool:
    def __init__(self, pieces: Callable[[int, ScenarioResult], dict[str, str]] | None = None) -> None:
        """``pieces``: renders a result's parts of the reports (harness/report/write.py ``render_pieces``), kept
        beside its trace for ``RunReport.pieces`` (``piece``)."""
        self.folder = Path(tempfile.mkdtemp(prefix="rlm-conformance-traces-"))
        # Removed when the spool (held by the report's ``full_traces``) is collected, or at exit.
        weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.load = functools.lru_cache(maxsize=1)(self._load)  # the HTML view reads one trace thrice in a row
        self._pieces = pieces

    def keep(self, index: int, result: ScenarioResult) -> ScenarioResult:
        """Write ``result``'s full trace (and its report parts); return the result with its light trace."""
        if self._pieces is not None:
            try:
                pieces = self._pieces(index, result)
            except Exception:  # noqa: BLE001 - not kept: the report renders it again and says what failed there
                pieces = {}
            for name, text in pieces.items():
                (self.folder / f"{index}.{name}.piece").write_text(text, encoding="utf-8")
        if result.trace is None:
            return result
        with (self.folder / f"{index}.pickle").open("wb") as out:
            pickle.dump(result.trace, out, protocol=pickle.HIGHEST_PROTOCOL)
        light = result.trace.model_copy(update={name: [] for name in BULKY})
        return dataclasses.replace(result, trace=light)

    def _load(self, index: int) -> Trace | None:
        path = self.folder / f"{index}.pickle"
        if not path.is_file():
            return None
        with path.open("rb") as source:
            return pickle.load(source)

    def piece(self, index: int, name: str) -> str | None:
        """The part of report ``name`` that ``keep`` rendered for result ``index``, if any."""
        try:
            return (self.folder / f"{index}.{name}.piece").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def close(self) -> None:
        self.load.cache_clear()
        shutil.rmtree(self.folder, ignore_errors=True)
