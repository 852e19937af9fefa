"""Reports: one pure renderer per format, all reading a ``RunReport`` and nothing else.

``render_junit``, ``render_markdown``, ``render_html`` and ``render_json`` return
text; ``render_terminal`` prints to a rich ``Console``; ``write_reports`` writes
the files atomically into a reports folder; ``load_report_json`` reads the JSON
back so ``rlm-conformance report`` can re-render without re-running.
"""

from .html import render_html
from .json_report import ReportError, load_report_json, render_json
from .junit import render_junit
from .markdown import render_markdown
from .summary import summary_line
from .terminal import render_terminal
from .write import DEFAULT_FORMATS, FORMATS, write_reports

__all__ = ["DEFAULT_FORMATS", "FORMATS", "ReportError", "load_report_json", "render_html", "render_json",
           "render_junit", "render_markdown", "render_terminal", "summary_line", "write_reports"]
