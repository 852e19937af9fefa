"""The ``rlm-conformance`` command: every verb is a module of this package, registered once in ``VERBS``, with
``COMMANDS`` (its verb names and what runs them) and its parser: ``PARSER`` (name, help, description) and
``add_arguments(parser)``, or, for a verb whose package defines its own (audit, import, explore),
``add_parser(commands)``. A verb's settings are resolved once (``settings.settle``: a flag, else
``[tool.rlm-conformance]``, else the default) before it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import HarnessError
from ..run.scenario_run import PROG
from . import (audit, crash, diff, differential, doctor, explain, explore, export, importing, init, listing, merge,
               record, report, run)
from .common import EXIT_INTERRUPTED, EXIT_USAGE, tool_version
from .settings import settle

VERBS = (run, record, merge, export, listing, report, explain, init, doctor, audit, importing, explore, differential,
         crash, diff)
PASSTHROUGH: dict[str, Callable[[Sequence[str]], int]] = {name: fn for verb in VERBS
                                                           for name, fn in getattr(verb, "PASSTHROUGH", {}).items()}


def commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    return {name: fn for verb in VERBS for name, fn in verb.COMMANDS.items()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Conformance suite for Recursive-Language-Model agents on Google ADK and Databricks.",
        epilog="Exit codes: 0 all passed; 1 a check failed or a scenario could not run; 2 usage or input error. "
               f"Start with: {PROG} run (replays cassettes against the reference agent, offline).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {tool_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        if hasattr(verb, "PARSER"):  # the CLI's own verbs say their parser; audit, import, explore: their package's
            verb.add_arguments(commands.add_parser(**verb.PARSER))
        else:
            verb.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in PASSTHROUGH:  # its own parser: argparse cannot hand options through a sub-command
        return PASSTHROUGH[argv[0]](argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        settle(args)
        return commands()[args.command](args)
    except HarnessError as exc:
        message = str(exc).strip() or type(exc).__name__
        for flag, origin in getattr(args, "configured_by", {}).items():
            if message.startswith(flag + " "):  # the value is the pyproject's: say so, that is what to fix
                message = f"{message} (set by {origin})"
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
