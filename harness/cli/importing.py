"""``rlm-conformance import`` and ``capture``: a team's ADK material and stored sessions become scenarios
(harness/importers/)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(commands: Any) -> None:
    from ..importers.command import add_import_parser

    add_import_parser(commands)


def run_import(args: argparse.Namespace) -> int:
    from ..importers.command import cmd_import

    return cmd_import(args)


def run_capture(args: argparse.Namespace) -> int:
    from ..importers.command import cmd_capture

    return cmd_capture(args)


COMMANDS = {"import": run_import, "capture": run_capture}
