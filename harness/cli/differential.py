"""``rlm-conformance differential``: the scenarios on several session services, compared (its own parser:
argparse cannot hand options through a sub-command, so ``main`` passes the arguments on as they are)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any


PARSER: dict[str, Any] = {
    "name": "differential",
    "add_help": False,
    "help": "run the scenarios on several session services and compare what each persisted "
            "(arguments: see `rlm-conformance differential --help`)",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(differential: argparse.ArgumentParser) -> None:
    differential.add_argument("arguments", nargs=argparse.REMAINDER)


def run_passthrough(argv: Sequence[str]) -> int:
    from ..differential.run import main as differential_main

    return differential_main(list(argv))


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}  # run_passthrough takes its arguments as they are
PASSTHROUGH = {"differential": run_passthrough}
