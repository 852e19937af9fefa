"""``rlm-conformance differential``: the scenarios on several session services, compared (its own parser:
argparse cannot hand options through a sub-command, so ``main`` passes the arguments on as they are)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any


def add_parser(commands: Any) -> None:
    differential = commands.add_parser(
        "differential", add_help=False,
        help="run the scenarios on several session services and compare what each persisted "
             "(arguments: see `rlm-conformance differential --help`)")
    differential.add_argument("arguments", nargs=argparse.REMAINDER)


def run_passthrough(argv: Sequence[str]) -> int:
    from ..differential.run import main as differential_main

    return differential_main(list(argv))


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}  # run_passthrough takes its arguments as they are
PASSTHROUGH = {"differential": run_passthrough}
