"""A user's session service (``--session-service module:attr``) runs in the scenario's private work folder.

docs/your-agent.md promises it: the factory is called there, and the folder is the current directory while the
scenario runs, so a service that names its store relatively — ADK's ``DatabaseSessionService(
"sqlite+aiosqlite:///sessions.db")``, as a team writes it for ``adk web`` — keeps it in that folder, which goes
when the run ends. Called in the project folder instead, the file outlived the run and the next run's repeatable
session and event ids collided with its rows (``UNIQUE constraint failed: events.id``) in every turn.

The current directory is the process's: one scenario runs at a time per process (``run -j N`` and ``explore -j N``
run workers), and it is put back when the scenario ends, however it ends. What the harness itself reads or writes
during the run is named absolutely first, the target is imported before, and the project folder stays on
``sys.path`` for the imports a run makes late (a driver, an agent's lazy import).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from .options import RunOptions


def is_user_service(spec: str) -> bool:
    """A ``module:attr`` session service (the built-in ones name their files in the folder themselves)."""
    return ":" in spec


@contextlib.contextmanager
def in_service_folder(options: RunOptions, folder: Path, target: str | None = None) -> Iterator[RunOptions]:
    """``options`` with its paths absolute, the current directory ``folder`` for a user's session service while the
    block runs (other runs: unchanged). ``target`` is imported first, from the project folder, as ``run`` would."""
    if not is_user_service(options.session_service):
        yield options
        return
    from ..targets.registry import resolve_target

    if target is not None:
        resolve_target(target)  # imported from the project folder; its errors are the run's, as they would be
    project = os.getcwd()
    options = replace(options, cassette_dir=Path(os.path.abspath(options.cassette_dir)),
                      profile_path=Path(os.path.abspath(options.profile_path)) if options.profile_path else None,
                      probe_share=os.path.abspath(options.probe_share) if options.probe_share else None)
    added = project not in sys.path
    if added:
        sys.path.insert(sys.path.index("") + 1 if "" in sys.path else 0, project)
    os.chdir(folder)
    try:
        yield options
    finally:
        os.chdir(project)
        if added and project in sys.path:
            sys.path.remove(project)
