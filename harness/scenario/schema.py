"""JSON Schema of the scenario format, for editors (yaml-language-server) and other tools.

``python -m harness.scenario.schema`` writes ``scenarios/scenario.schema.json`` under the current
directory (``--output PATH`` elsewhere, ``--output -`` to stdout); a test fails when the repository's
committed file and the models disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.scenario.models import Scenario

DEFAULT_OUTPUT = Path("scenarios") / "scenario.schema.json"
"""Where ``python -m harness.scenario.schema`` writes, relative to the current directory: the project's
scenarios folder, never the installed package (a non-editable install lives in site-packages)."""

SCHEMA_PATH = Path(__file__).resolve().parents[2] / DEFAULT_OUTPUT
"""The copy this repository ships (meaningful in a checkout, which the tests run from)."""

REGENERATE = "python -m harness.scenario.schema"
"""The command, run from the repository's root, that rewrites ``SCHEMA_PATH``."""


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "scenario.schema.json", **schema}


def render_json_schema() -> str:
    """The schema as the exact text ``write_json_schema`` writes (stable key order, trailing newline)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_json_schema(path: str | os.PathLike[str] = DEFAULT_OUTPUT) -> Path:
    """Write the schema to ``path`` (relative paths: from the current directory) and return it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_json_schema(), encoding="utf-8")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m harness.scenario.schema [--output PATH]``; exit 2 on a usage error."""
    parser = argparse.ArgumentParser(
        prog=REGENERATE, description="Write the JSON Schema of scenario files, for editor completion "
                                     "(# yaml-language-server: $schema=./scenario.schema.json).")
    parser.add_argument("--output", "-o", metavar="PATH", default=None,
                        help=f"where to write it, or - for stdout (default: {DEFAULT_OUTPUT}, under the current "
                             "directory, whose scenarios/ folder must exist)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.output == "-":
        sys.stdout.write(render_json_schema())
        return 0
    if args.output is None and not DEFAULT_OUTPUT.parent.is_dir():
        parser.error(f"there is no {DEFAULT_OUTPUT.parent}{os.sep} folder in {Path.cwd()}: run this from your "
                     "project's root (where scenarios/ is), or name the file with --output PATH")
    print(f"wrote {write_json_schema(args.output or DEFAULT_OUTPUT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
