"""Write the report files: every format is rendered in memory first, then each file is replaced atomically.

A renderer that raises leaves every previous report untouched (nothing is
written before all renderers succeeded), and a write that fails leaves neither
a half-written file nor a stray temporary one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..files import write_atomic
from ..result import RunReport
from .html import render_html
from .json_report import ReportError, render_json
from .junit import render_junit
from .markdown import render_markdown


@dataclass(frozen=True)
class ReportFormat:
    name: str
    filename: str
    render: Callable[[RunReport, Mapping[str, str]], str]


FORMATS: dict[str, ReportFormat] = {
    "junit": ReportFormat("junit", "conformance.xml", lambda report, titles: render_junit(report)),
    "markdown": ReportFormat("markdown", "conformance.md",
                             lambda report, titles: render_markdown(report, titles=titles)),
    "html": ReportFormat("html", "conformance.html", lambda report, titles: render_html(report, titles=titles)),
    "json": ReportFormat("json", "conformance.json", lambda report, titles: render_json(report)),
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


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` whole; 0644, as a report is meant to be read by others (CI artifacts)."""
    write_atomic(path, text.encode("utf-8"), mode=0o644, durable=True)


def write_reports(report: RunReport, out_dir: str | os.PathLike[str],
                  formats: Sequence[str] = DEFAULT_FORMATS, *,
                  titles: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Render ``formats`` and write them into ``out_dir``; returns format name -> written path."""
    names = check_formats(formats)
    out = Path(out_dir)
    rendered = {name: FORMATS[name].render(report, dict(titles or {})) for name in names}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the reports folder {out} ({exc.strerror or exc}). "
                          f"Fix: pass a writable --reports-dir.") from None
    written: dict[str, Path] = {}
    for name, text in rendered.items():
        path = out / FORMATS[name].filename
        try:
            write_atomically(path, text)
        except OSError as exc:
            raise ReportError(f"cannot write {path} ({exc.strerror or exc}); the previous file, if any, is "
                              f"unchanged. Fix: pass a writable --reports-dir.") from None
        written[name] = path
    return written
