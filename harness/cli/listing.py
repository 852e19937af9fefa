"""``rlm-conformance list``: the scenarios, their descriptions, tags and targets."""

from __future__ import annotations

import argparse
from typing import Any

from ..recording.layout import DEFAULT_TARGET
from .common import EXIT_OK, select, stdout_console


PARSER: dict[str, Any] = {
    "name": "list",
    "help": "list scenarios: names, descriptions, tags",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(listing: argparse.ArgumentParser) -> None:
    listing.add_argument("--scenarios-dir", metavar="DIR",
                         help="folder of scenario YAML files (default: scenarios in [tool.rlm-conformance], else "
                              "scenarios)")
    listing.add_argument("-k", metavar="SUBSTRING", dest="substring", help="only names or tags containing SUBSTRING")


def run(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from ..scenario.loader import load_scenarios

    where = ", ".join(args.scenarios_dir)
    scenarios = select(load_scenarios(args.scenarios_dir), (), args.substring, where)
    table = Table(title=f"{len(scenarios)} scenario(s) in {where}", title_justify="left")
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("description")
    table.add_column("tags")
    table.add_column("target", no_wrap=True)
    for scenario in scenarios:
        # Text, not markup: a description says "sessions [user_1x1]", which rich would take for a style tag.
        table.add_row(Text(scenario.name), Text(scenario.description), Text(", ".join(scenario.tags)),
                      Text(scenario.target or (f"(profile {scenario.profile})" if scenario.profile else DEFAULT_TARGET)))
    stdout_console().print(table)
    return EXIT_OK


COMMANDS = {"list": run}
