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
from ..result import RunReport
from .html import iter_html
from .json_report import ReportError, iter_json
from .junit import iter_junit
from .markdown import render_markdown


@dataclass(frozen=True)
class ReportFormat:
    name: str
    filename: str
    render: Callable[[RunReport, Mapping[str, str]], str | Iterable[str]]
    """The report's text, whole or in pieces."""


FORMATS: dict[str, ReportFormat] = {
    "junit": ReportFormat("junit", "conformance.xml", lambda report, titles: iter_junit(report)),
    "markdown": ReportFormat("markdown", "conformance.md",
                             lambda report, titles: render_markdown(report, titles=titles)),
    "html": ReportFormat("html", "conformance.html", lambda report, titles: iter_html(report, titles=titles)),
    "json": ReportFormat("json", "conformance.json", lambda report, titles: iter_json(report)),
}
"""Format name -> file name and renderer; ``titles`` (check name -> title) feed the legends."""
DEFAULT_FORMATS: tuple[str, ...] = ("junit", "markdown", "html", "json")


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
