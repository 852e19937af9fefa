"""Write the report files: every format is streamed into a temporary file beside its report, then, once all are
complete, each replaces its report.

Streamed, because a run of hundreds of scenarios makes reports of tens of MB (the JSON and HTML carry every
trace): the text is never held whole. A renderer that raises leaves every previous report untouched (nothing is
replaced before all renderers succeeded), and a write that fails leaves neither a half-written file nor a stray
temporary one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import StagedFile
from ..result import RunReport, ScenarioResult
from .html import iter_html, scenario_section
from .json_report import ReportError, iter_json, result_piece
from .junit import iter_junit, testcases_piece
from .markdown import render_markdown

Piece = Callable[[int, ScenarioResult, Mapping[str, str]], str]
"""``(index, result with its full trace, titles) -> text``: one result's part of a report, as its renderer writes it
when it finds no such part in the ``RunReport`` (``RunReport.piece_at``)."""


@dataclass(frozen=True)
class ReportFormat:
    name: str
    filename: str
    render: Callable[[RunReport, Mapping[str, str]], str | Iterable[str]]
    """The report's text, whole or in pieces."""
    piece: Piece | None = None
    """Its per-result part, for ``render_pieces``; None where that part is too small to be worth keeping."""


FORMATS: dict[str, ReportFormat] = {
    "junit": ReportFormat("junit", "conformance.xml", lambda report, titles: iter_junit(report),
                          piece=lambda index, result, titles: testcases_piece(result)),
    "markdown": ReportFormat("markdown", "conformance.md",
                             lambda report, titles: render_markdown(report, titles=titles)),
    "html": ReportFormat("html", "conformance.html", lambda report, titles: iter_html(report, titles=titles),
                         piece=lambda index, result, titles: scenario_section(
                             index, result, lambda: result.trace, titles=titles, subject="scenario")),
    "json": ReportFormat("json", "conformance.json", lambda report, titles: iter_json(report),
                         piece=lambda index, result, titles: result_piece(result, result.trace)),
}
"""Format name -> file name and renderer; ``titles`` (check name -> title) feed the legends."""
DEFAULT_FORMATS: tuple[str, ...] = ("junit", "markdown", "html", "json")


def render_pieces(index: int, result: ScenarioResult, *, formats: Sequence[str],
                  titles: Mapping[str, str]) -> dict[str, str]:
    """``results[index]``'s part of each report in ``formats`` that has one (a run's result: subject "scenario").

    What the CLI renders as each result of a run arrives (harness/run/trace_spool.py), while the workers are still
    busy, so that after the last result writing the reports only joins the parts: the JSON and HTML of a result
    are most of a report's rendering, and a suite's reports took ~0.6 s after its last result."""
    return {name: FORMATS[name].piece(index, result, titles) for name in formats if FORMATS[name].piece is not None}


def check_formats(formats: Sequence[str]) -> list[str]:
    """``formats`` de-duplicated in order; an unknown name is a ``ReportError`` naming the known ones."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ReportError(f"unknown report format(s) {', '.join(map(repr, unknown))}: use --format with "
                          f"{', '.join(FORMATS)} (repeat the flag or separate with commas).")
    return list(dict.fromkeys(formats))


def write_reports(report: RunReport, out_dir: str | os.PathLike[str],
                  formats: Sequence[str] = DEFAULT_FORMATS, *,
                  titles: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Render ``formats`` and write them into ``out_dir``; returns format name -> written path."""
    names = check_formats(formats)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the reports folder {out} ({exc.strerror or exc}). "
                          f"Fix: pass a writable --reports-dir.") from None
    staged: dict[str, StagedFile] = {}
    try:
        for name in names:
            path = out / FORMATS[name].filename
            text = FORMATS[name].render(report, dict(titles or {}))
            with _writing(path):
                staged[name] = StagedFile(path, mode=0o644)
            for chunk in _chunks((text,) if isinstance(text, str) else text):  # a renderer's error propagates as is
                with _writing(path):
                    staged[name].write(chunk.encode("utf-8"))
            with _writing(path):
                staged[name].finish(durable=True)
        for file in staged.values():
            with _writing(file.path):
                file.commit()
    except BaseException:
        for file in staged.values():
            file.discard()
        raise
    return {name: file.path for name, file in staged.items()}


def _chunks(pieces: Iterable[str], size: int = 1 << 16) -> Iterator[str]:
    """``pieces`` joined into chunks of about ``size`` characters: a report is up to ~100,000 pieces, and a write
    (with its error guard) per piece took half the time of writing the HTML report."""
    batch: list[str] = []
    length = 0
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(batch)
            batch, length = [], 0
    if batch:
        yield "".join(batch)


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """An ``OSError`` while writing ``path`` as a ``ReportError`` that names it and says the old file is kept."""
    try:
        yield
    except OSError as exc:
        raise ReportError(f"cannot write {path} ({exc.strerror or exc}); the previous file, if any, is "
                          f"unchanged. Fix: pass a writable --reports-dir.") from None
