"""``rlm-conformance audit``: the state checks on sessions a store already holds (harness/audit/)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import stdout_console


def add_parser(commands: Any) -> None:
    from ..audit.command import add_audit_parser

    add_audit_parser(commands)


def run(args: argparse.Namespace) -> int:
    from ..audit.command import cmd_audit

    return cmd_audit(args, stdout_console())


COMMANDS = {"audit": run}
