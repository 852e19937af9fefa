"""``rlm-conformance init``: draft a profile, a smoke scenario and the config table for a user's agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..run.scenario_run import PROG
from .common import EXIT_OK


PARSER: dict[str, Any] = {
    "name": "init",
    "help": "draft a profile, a smoke scenario and [tool.rlm-conformance] for your agent",
    "description": "Import --target, walk its agent tree and write rlm-profile.yaml (what could be inferred, "
                   "each line saying why; TODO for the rest), scenarios/smoke.yaml (green in scripted mode on a "
                   "correct agent) and a [tool.rlm-conformance] table in pyproject.toml. Existing files are never "
                   "overwritten without --force.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(init: argparse.ArgumentParser) -> None:
    init.add_argument("--target", metavar="MODULE:ATTR",
                      help="your agent: an ADK App, a root agent, or a zero-argument factory of either")
    init.add_argument("--dir", default=".", metavar="DIR", help="where to write (default: the current folder)")
    init.add_argument("--force", action="store_true",
                      help="overwrite rlm-profile.yaml and scenarios/smoke.yaml, and replace the "
                           "[tool.rlm-conformance] table (the rest of pyproject.toml is kept)")
    init.add_argument("--schema", action="store_true",
                      help="print the JSON Schema of profile files instead (python -m harness.targets.profile_schema "
                           "writes or checks it)")


def run(args: argparse.Namespace) -> int:
    from ..init.project import init_project, summary_lines
    from ..targets.profile_schema import render_json_schema

    if args.schema:
        sys.stdout.write(render_json_schema())
        return EXIT_OK
    if not args.target:
        raise HarnessError("--target is required: the module:attr naming your ADK App, root agent or zero-argument "
                           f"factory, e.g. `{PROG} init --target my_pkg.agent:app`.")
    result = init_project(args.target, Path(args.dir), force=args.force)
    print("\n".join(summary_lines(result, PROG)))
    return EXIT_OK


COMMANDS = {"init": run}
