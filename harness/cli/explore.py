"""``rlm-conformance explore``: generated conversations against a target, each failing check shrunk to a scenario
(harness/explore/)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import stdout_console


def add_parser(commands: Any) -> None:
    from ..explore.command import add_explore_parser

    add_explore_parser(commands)


def run(args: argparse.Namespace) -> int:
    from ..explore.command import cmd_explore

    return cmd_explore(args, stdout_console())


COMMANDS = {"explore": run}
