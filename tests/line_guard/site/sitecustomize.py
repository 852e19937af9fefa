"""The import guard of the line-independent run (tests/line_guard), in every Python process that run starts.

PYTHONPATH puts this folder first in that run, so each child interpreter (an xdist worker, a Job_B executor,
a CLI under test) loads this file at startup and refuses the same imports as the test process. The names come
from ``RLM_LINE_GUARD`` (``name=distributions;...``), set by the plugin; outside that run this file does nothing.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

VARIABLE = "RLM_LINE_GUARD"


class LineDependentImport(Exception):  # noqa: N818 - not an ImportError on purpose: `except ImportError` fallbacks
    """An import of a package whose pinned version differs between the ADK lines. Deliberately not an
    ``ImportError``: code with an ``except ImportError`` fallback must not quietly take it here."""


class LineGuard(importlib.abc.MetaPathFinder):
    def __init__(self, blocked: dict[str, str]) -> None:
        self.blocked = blocked

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        top = name.partition(".")[0]
        if top in self.blocked:
            raise LineDependentImport(
                f"import {name}: {self.blocked[top]} is pinned differently in constraints.txt and "
                f"constraints-adk1.txt, so what imports it depends on the ADK line. A test marked "
                f"line_independent runs on one line only and may not import it: remove the mark (the test then "
                f"runs on both lines), or keep the import out of the test.")


def install() -> None:
    spec = os.environ.get(VARIABLE, "")
    if spec and not any(isinstance(finder, LineGuard) for finder in sys.meta_path):
        sys.meta_path.insert(0, LineGuard(dict(item.split("=", 1) for item in spec.split(";") if item)))


install()
