"""The workspace the processes of a crash-matrix run share, kept by the matrix's own process, and what it makes
possible: crash points inside an execution, and the workspace's own record of which job runs executed code.

A backend whose plugin declares ``Backend.crash_workspace`` (harness/targets/plugins.py) has it started here once
per run of the matrix (the uncrashed run; each crash point, for its killed run and its recovery); the processes
reach it through the options it gives them, so what the killed one wrote there is there for the recovery. When the
harness's fake is behind it, the matrix sees each ``runs/submit`` as it happens (``JobsApi.on_submit``): it notes
which event the submitting process had last acknowledged (where a ``submitted`` point falls in the run), and at
point ``submitted #k`` it SIGKILLs the process once the workspace has created the k-th run, leaving the submit
unanswered. The run executes on the workspace all the same: held PENDING (its compute starting) until the
workspace's next Jobs request, the recovery's, or ``release`` after the recovery: a client that restarts meets its
run unfinished, as one restarting within a real run's minutes of startup does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..databricks_fake import NoReply, Submit
from ..run.options import RunOptions
from .journal import read_journal
from .points import CrashPoint


@dataclass(frozen=True)
class RunSubmitted:
    """A line of the workspace's ledger, with the run process that submitted it."""

    submit: Submit
    phase: str  # "uncrashed run", "crashed run" or "recovery"


@dataclass(frozen=True)
class JobRuns:
    """What the uncrashed run's workspace saw: its ledger, and per created run the event acknowledged before it."""

    seen: bool  # the harness kept the workspace (False: nothing below is known)
    ledger: list[RunSubmitted]
    after_events: list[int]  # per created run, in order: the event last acknowledged before its submit (-1: none)


class CrashWorkspace:
    """One matrix run's workspace: the options its processes run with, and the fake's submits as they happen."""

    def __init__(self, options: RunOptions, fake: Any = None) -> None:
        self.options = options
        self.fake = fake
        self._phases: list[tuple[int, str]] = []  # (first ledger ordinal, phase)
        self._journal: Path | None = None
        self._kill: CrashPoint | None = None
        self._proc: subprocess.Popen | None = None
        self.after_event: dict[int, int] = {}  # created run k -> the event last acknowledged before it (-1: none)
        if fake is not None:
            fake.jobs.on_submit = self._submitted

    @property
    def sees_runs(self) -> bool:
        """The harness's fake is behind the workspace: its ledger is evidence, and ``submitted`` points exist."""
        return self.fake is not None

    def child(self, phase: str, kill: CrashPoint | None) -> Callable[[subprocess.Popen, Path], None]:
        """What ``matrix._run_child`` calls once the run's process started: its submits are ``phase``'s, and
        at a ``submitted`` point ``kill`` it is killed there."""
        def started(proc: subprocess.Popen, journal: Path) -> None:
            self._phases.append((len(self.fake.jobs.ledger()) if self.fake is not None else 0, phase))
            self._journal, self._proc = journal, proc
            self._kill = kill if kill is not None and kill.kind == "submitted" else None
        return started

    def _submitted(self, submit: Submit) -> None:
        acks = read_journal(self._journal).acks if self._journal is not None else []
        self.after_event[submit.created] = acks[-1][1].index if acks else -1
        point, proc = self._kill, self._proc
        if point is None or proc is None or submit.created != point.index:
            return
        # The killing line first, as the journal writes its own: the matrix reads the journal once the process is
        # gone, which can be before this thread would have gone on after the kill.
        _append_killing(self._journal, {"kind": "killing", "point": "submitted", "index": point.index,
                                        "run_id": submit.run_id, "id": None, "author": point.author})
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()  # dead before the workspace goes on: it never hears back
        raise NoReply

    def ledger(self) -> list[RunSubmitted]:
        """Every submit the workspace saw, in order, with the phase whose process made it."""
        if self.fake is None:
            return []
        return [RunSubmitted(s, next((phase for first, phase in reversed(self._phases) if s.ordinal >= first), ""))
                for s in self.fake.jobs.ledger()]

    def job_runs(self) -> JobRuns:
        ledger = self.ledger()
        return JobRuns(self.sees_runs, ledger, [self.after_event.get(r.submit.created, -1) for r in ledger
                                                if r.submit.started_run])

    def release(self) -> None:
        """Start the runs still held (nobody asked the workspace about jobs since): they execute all the same."""
        if self.fake is not None:
            self.fake.jobs.launch_held()


def _append_killing(journal: Path | None, line: dict[str, Any]) -> None:
    """The journal's ``killing`` line, written for the process the matrix kills (it waits in the submit; a line of
    its own goes in whole, both append)."""
    if journal is None:
        return
    with journal.open("a+b") as handle:  # appends wherever it reads
        size = handle.seek(0, os.SEEK_END)
        cut = False
        if size:  # a line the kill cut short ends here: start on a fresh one
            handle.seek(size - 1)
            cut = handle.read(1) != b"\n"
        handle.write((b"\n" if cut else b"") + json.dumps(line, sort_keys=True).encode("utf-8") + b"\n")
        handle.flush()
        os.fsync(handle.fileno())


@contextlib.contextmanager
def crash_workspace(options: RunOptions, folder: Path) -> Iterator[CrashWorkspace]:
    """The workspace of one matrix run, as the backend's plugin provides it (none: the processes' own)."""
    hook = None
    if options.backend != "local":
        from ..targets.plugins import backend

        hook = backend(options.backend).crash_workspace
    if hook is None:
        yield CrashWorkspace(options)
        return
    folder.mkdir(parents=True, exist_ok=True)
    with hook(options, folder) as shared:
        yield CrashWorkspace(shared.options, shared.fake)
