"""``explore --example-timeout S``: an example that runs past S seconds is a finding of its own (``target_hung``),
with where the target was stuck, instead of a search that hangs silently.

A hung target cannot be stopped from inside its own process (a deadlocked pipe, a lock, a thread ADK waits
for), so examples under a limit run in worker processes (pool.py; ``-j 1`` is one worker). Each worker arms
``faulthandler.dump_traceback_later`` for every example: past the limit it writes every thread's stack into a
file of the worker's temporary folder and ends the process. The pool sees the worker die, reads that file here,
and judges the example ``target_hung`` where the stack is the target's (not the standard library's).
"""

from __future__ import annotations

import faulthandler
import os
import re
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .findings import TARGET_HUNG, Verdict

DUMP_NAME = "explore-hang.txt"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_STDLIB = tuple(os.path.realpath(p) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
_HARNESS = os.path.realpath(Path(__file__).resolve().parents[1])


@contextmanager
def watched(dump: IO[str], timeout_s: float | None) -> Iterator[None]:
    """In a worker: past ``timeout_s`` (None: no limit) every thread's stack goes to ``dump`` and the process
    ends; a run that finishes in time disarms it."""
    if timeout_s is None:
        yield
        return
    dump.seek(0)
    dump.truncate()
    faulthandler.dump_traceback_later(timeout_s, exit=True, file=dump)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def hung_verdict(folder: str, timeout_s: float | None) -> Verdict | None:
    """The verdict of the example a dead worker was running if it died of the limit (its dump in ``folder``, the
    worker's temporary folder), else None."""
    path = Path(folder) / DUMP_NAME
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if timeout_s is None or "Timeout (" not in text:
        return None
    evidence = (f"the target did not finish the conversation within --example-timeout {timeout_s:g}s; stuck in "
                f"{where(text)}")
    return Verdict(failing={TARGET_HUNG: "the target hung"}, evidence={TARGET_HUNG: evidence})


def where(dump: str) -> str:
    """The innermost frame of each thread that is not the standard library's (the harness's last), from a
    ``faulthandler`` dump: where the target waits."""
    stacks: list[list[tuple[str, str, str]]] = []
    for line in dump.splitlines():
        if "most recent call first" in line:
            stacks.append([])
        elif (match := _FRAME.match(line)) and stacks:
            stacks[-1].append((match["file"], match["line"], match["func"]))
    places = []
    for stack in stacks:
        own = [f for f in stack if not f[0].startswith("<") and not os.path.realpath(f[0]).startswith(_STDLIB)]
        if own:
            places.append(min(own, key=lambda f: os.path.realpath(f[0]).startswith(_HARNESS)))
    places.sort(key=lambda f: os.path.realpath(f[0]).startswith(_HARNESS))
    shown = [f"{_shown(file)}:{line} ({func})" for file, line, func in dict.fromkeys(places)][:3]
    return "; ".join(shown) or "the standard library only (run the written scenario to watch it hang)"


def _shown(file: str) -> str:
    try:
        return Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return file
