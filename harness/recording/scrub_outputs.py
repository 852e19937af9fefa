"""Scrubbing what leaves a run besides the cassette: the result (snapshots, reports) and log records.

The cassette is scrubbed at record time by ``cassettes.py``; a planted key can
also travel in a user message, a model answer or Job_B's output, and from
there into the trace, check evidence, errors and logs. These helpers apply the
same scrubbers there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from harness.recording.filters import could_scrub, scrub_text, scrub_value

from ..json_walk import strings_in


def scrub_result(result: Any, *, secrets: Sequence[str] = ()) -> Any:
    """A ``ScenarioResult`` with every secret scrubbed from its trace, checks and error.

    Snapshots and reports are rendered from the result, so nothing a user typed,
    a model answered or Job_B printed reaches them with a credential in it. The
    checks have already run on the real trace.
    """
    from dataclasses import replace as with_fields

    from harness.trace.model import Trace

    trace = result.trace
    if trace is not None:
        dumped = trace.model_dump(mode="json")
        # Scrubbing each of a trace's ~1,000 strings took ~10 ms a scenario; one look at all of them joined says
        # whether any needs it (nearly never).
        if could_scrub("\n".join(strings_in(dumped)), secrets=secrets):
            scrubbed = scrub_value(dumped, secrets=secrets)
            trace = Trace.model_validate(scrubbed) if scrubbed != dumped else trace
    checks = tuple(with_fields(c, explanation=scrub_text(c.explanation, secrets=secrets),
                               evidence=tuple(scrub_text(e, secrets=secrets) for e in c.evidence))
                   for c in result.checks)
    error = scrub_text(result.error, secrets=secrets) if result.error is not None else None
    return with_fields(result, trace=trace, checks=checks, error=error)


_LOG_SECRETS: list[tuple[str, ...]] = []
_LOG_FACTORY: list[Any] = []  # the record factory that was installed before ours


def _scrubbing_record_factory(*args: Any, **kwargs: Any) -> Any:
    import logging

    record = _LOG_FACTORY[0](*args, **kwargs)
    secrets = [value for group in list(_LOG_SECRETS) for value in group]
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is the logging module's to report
        return record
    if (clean := scrub_text(message, secrets=secrets)) != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = scrub_text(logging.Formatter().formatException(record.exc_info), secrets=secrets)
    if record.stack_info:
        record.stack_info = scrub_text(record.stack_info, secrets=secrets)
    return record


@contextlib.contextmanager
def scrubbing_log_records(secrets: Sequence[str] = ()) -> Iterator[None]:
    """While active, every log record (message, arguments, traceback) is created with secrets scrubbed.

    A record factory, not a handler filter: it covers every logger and every
    handler (pytest's caplog, the CLI's stderr, logging's last resort) alike.
    Nests: the factory stays installed until the outermost block ends.
    """
    import logging

    group = tuple(secrets)
    if not _LOG_SECRETS:
        _LOG_FACTORY[:] = [logging.getLogRecordFactory()]
        logging.setLogRecordFactory(_scrubbing_record_factory)
    _LOG_SECRETS.append(group)
    try:
        yield
    finally:
        _LOG_SECRETS.remove(group)
        if not _LOG_SECRETS:
            logging.setLogRecordFactory(_LOG_FACTORY[0])
