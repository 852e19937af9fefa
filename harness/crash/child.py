"""``python -m harness.crash.child SPEC``: one run of a crash matrix in its own process.

SPEC is a pickle (written by ``matrix.py``, read by the same Python): the scenario, the RunOptions (a kept work
folder), the journal's path, the crash point (None: run to the end), the sessions to read first, ``probe``
(read them and stop: does the store keep anything across processes?) and, for the recovery ``resume``, the
invocation to resume (``resume``, optional: resume.py). A run that ends writes
``{"result", "profile", "reads", "cannot_resume"}`` (pickled) to the spec's ``out`` path; a run killed at its point
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
from .resume import Resume, cannot_resume, resume_first_turn


class ChildJournal(CrashJournal):
    """The crash journal, which also says whether the built target could resume, and makes the recovery's first
    turn the resume of the crashed invocation when the spec asks for one."""

    def __init__(self, path: Path, *, resume: Resume | None = None, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.resume = resume
        self.cannot_resume: str | None = None

    async def before_turns(self, built: Any, app_name: str, scenario: Any) -> None:
        await super().before_turns(built, app_name, scenario)
        self.cannot_resume = cannot_resume(built)
        if self.resume is not None and self.cannot_resume is None:
            resume_first_turn(built, self.resume)


def _write(spec: dict, result: Any, journal: ChildJournal) -> None:
    write_atomic(Path(spec["out"]), pickle.dumps({"result": result, "profile": journal.profile,
                                                   "reads": journal.reads, "cannot_resume": journal.cannot_resume}))


def main(spec_path: str) -> int:
    spec = pickle.loads(Path(spec_path).read_bytes())
    then = None
    if spec.get("probe"):  # read the store and stop: nothing of the run after the reads matters, nor is wanted
        def then(journal: ChildJournal) -> None:
            _write(spec, None, journal)
            os._exit(0)  # before any turn; the process only read
    journal = ChildJournal(Path(spec["journal"]), kill=spec["kill"], read_sessions=spec["read_sessions"],
                           resume=spec.get("resume"), then=then)
    result = run_scenario(spec["scenario"], replace(spec["options"], observer=journal))
    journal.close()
    _write(spec, result, journal)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
