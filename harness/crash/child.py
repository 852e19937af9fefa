"""``python -m harness.crash.child SPEC``: one run of a crash matrix in its own process.

SPEC is a pickle (written by ``matrix.py``, read by the same Python): the scenario, the RunOptions (a kept work
folder), the journal's path, the crash point (None: run to the end), the sessions to read first and ``probe``
(read them and stop: does the store keep anything across processes?). A run that
ends writes ``{"result", "profile", "reads"}`` (pickled) to the spec's ``out`` path; a run killed at its point
writes nothing but its journal.
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..files import write_atomic
from ..run.runner import run_scenario
from .journal import CrashJournal


def _write(spec: dict, result: Any, journal: CrashJournal) -> None:
    write_atomic(Path(spec["out"]), pickle.dumps({"result": result, "profile": journal.profile,
                                                   "reads": journal.reads}))


def main(spec_path: str) -> int:
    spec = pickle.loads(Path(spec_path).read_bytes())
    then = None
    if spec.get("probe"):  # read the store and stop: nothing of the run after the reads matters, nor is wanted
        def then(journal: CrashJournal) -> None:
            _write(spec, None, journal)
            os._exit(0)  # before any turn; the process only read
    journal = CrashJournal(Path(spec["journal"]), kill=spec["kill"], read_sessions=spec["read_sessions"], then=then)
    result = run_scenario(spec["scenario"], replace(spec["options"], observer=journal))
    journal.close()
    _write(spec, result, journal)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
