"""Which part of a scenario's run raised, in words: nothing a run meets escapes it as a traceback.

Besides the harness, a run calls code of other owners: the target's factory, the session service (its
constructor, then the methods the target and the harness call) and the target's turns. A turn that raises is a
verdict of its own, with its origin (harness/trace/crash.py). Around every other call into a target's or a
session service's code the runner puts ``blamed(origin)``: what that code raises becomes a ``CalledCodeError``
naming the part, the exception and the innermost frame, and the scenario's result is ``error`` with that text.

Whatever else escapes a run is the harness's own: a bug, said as such (``harness_bug``), with the last frames of
its traceback in the text and the whole traceback in the log at debug level (``--log-level debug``), so that it
can be reported; it is that scenario's ``error`` too, and the other scenarios go on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CalledCodeError, HarnessError
from ..trace.crash import exception_chain

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from .options import RunOptions
    from ..scenario.models import Scenario

HARNESS = "the harness (a bug: please report)"
BUG_FRAMES = 6
"""Frames of a harness bug's traceback kept in its error text (innermost last)."""

log = logging.getLogger(__name__)
_HARNESS_DIR = str(Path(__file__).resolve().parents[1]) + os.sep  # harness/, from harness/run/failures.py


def _said(exc: BaseException) -> str:
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _innermost_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of the innermost exception in ``exc``'s chain that has any (C code raises without one)."""
    for link in reversed(exception_chain(exc)):
        frames = traceback.extract_tb(link.__traceback__)
        if frames:
            return list(frames)
    return []


def describe(origin: str, exc: BaseException) -> str:
    """``<origin> raised <Type>: <message> [(caused by ...)] (innermost frame: <file>:<line>)``."""
    chain = exception_chain(exc)
    text = f"{origin} raised {_said(exc)}"
    if len(chain) > 1:
        text += f" (caused by {_said(chain[-1])})"
    frames = _innermost_frames(exc)
    return f"{text} (innermost frame: {frames[-1].filename}:{frames[-1].lineno})" if frames else text


@contextlib.contextmanager
def blamed(origin: str) -> Iterator[None]:
    """Run a call into code of another part (``origin``: "the target factory pkg.mod:make_app", ...): what it
    raises becomes a ``CalledCodeError`` saying so. A ``HarnessError`` passes as it is: it already says what to
    fix (a factory that returned no session service, a cassette miss, a blocked connection). So does an exception
    raised in the harness's own code on the way (a wrapper, a read of what the call returned): a harness bug."""
    try:
        yield
    except HarnessError:
        raise
    except Exception as exc:
        frames = _innermost_frames(exc)
        if frames and _in_harness(frames[-1].filename):
            raise
        raise CalledCodeError(describe(origin, exc)) from exc


def _in_harness(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_HARNESS_DIR)
    except (OSError, ValueError):  # "<string>" and the like
        return False


def harness_bug(exc: BaseException) -> str:
    """The error text of an exception no part of the run owns but the harness: its last frames, and the whole
    traceback in the log (debug level)."""
    log.debug("%s", HARNESS, exc_info=exc)
    frames = _innermost_frames(exc)[-BUG_FRAMES:]
    lines = [f"  {f.filename}:{f.lineno} in {f.name}" + (f": {f.line.strip()}" if f.line else "") for f in frames]
    return "\n".join([f"{describe(HARNESS, exc)}. Its last frames, innermost last:", *lines,
                      "(--log-level debug logs the whole traceback.)"])


def error_result(scenario: Scenario, options: RunOptions, error: str, duration_s: float) -> ScenarioResult:
    """The ``error`` result of a scenario that could not be judged: no checks, no trace."""
    from ..result import ScenarioResult
    from ..targets.choice import choose_target

    try:
        target = choose_target(scenario, target=options.target, profile=options.profile,
                               profile_path=options.profile_path, profile_is_default=options.profile_is_default).spec
    except Exception:  # noqa: BLE001 - its profile cannot be read: the error says why, the row needs a name only
        target = options.target or scenario.target or "?"
    return ScenarioResult(scenario=scenario.name, description=scenario.description, target=target,
                          llm_mode=options.llm_mode.value, session_service=options.session_service, checks=(),
                          trace=None, duration_s=duration_s, error=error)
