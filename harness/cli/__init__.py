"""``rlm-conformance``: run scenarios, record cassettes, list scenarios, re-render reports, explain checks, and more.

One module per verb (``run.py``, ``record.py`` ...), registered in ``main.VERBS``; what they share is ``common.py``,
and ``settings.py`` resolves every setting once.

Thin by design: it parses arguments, calls ``run_scenario`` and the reporters,
and turns a user error (``HarnessError``: a bad flag, scenario file, target,
missing key ...) into one paragraph on stderr and exit code 2 — never a
traceback. Exit codes:

* 0 — every scenario ran and every check passed (``record``: every cassette was written);
* 1 — a check failed, or a scenario could not run (a missing cassette, a target
  that crashed): a scenario that cannot be judged is a failed scenario. Whatever
  a target, its factory, its session service or the harness raises while a
  scenario runs is that scenario's ``error`` naming the part (harness/run/failures.py),
  and every report is still written;
* 2 — the command itself cannot start: bad arguments, scenario files, target,
  session service, profile, report format or report file.

``audit`` exits 1 when a gating check failed on a stored session (``--fail-on``), 0 otherwise.
``doctor`` exits 1 when a finding would break a recording (an error), 0 otherwise (warnings allowed).
"""

from __future__ import annotations

from .common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .main import build_parser, main

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]
