"""JSON Schema of target profile files, for editors (yaml-language-server) and other tools.

``python -m harness.targets.profile_schema`` writes ``harness/targets/profile.schema.json`` (the copy the
package ships; ``--output PATH`` elsewhere, ``--output -`` to stdout); a test fails when the committed file and
``TargetProfile`` disagree. ``--check FILE...`` validates profile files as the harness will read them (the same
messages: file:line, field, did-you-mean).

A profile file points an editor at the schema with its first line::

    # yaml-language-server: $schema=<path to harness/targets/profile.schema.json>
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.targets.profile import load_profile, profile_json_schema

SCHEMA_PATH = Path(__file__).resolve().parent / "profile.schema.json"
"""The copy the package ships (package data), next to this module."""

REGENERATE = "python -m harness.targets.profile_schema"
"""The command that rewrites ``SCHEMA_PATH`` from ``TargetProfile``."""


def json_schema() -> dict[str, Any]:
    """``TargetProfile``'s schema, plus the YAML aliases the loader accepts (``executor:`` for ``job_builder:``),
    so an editor does not flag a valid file."""
    schema = profile_json_schema()
    properties = schema.get("properties", {})
    for alias, field in ALIASES.items():
        if field in properties and alias not in properties:
            properties[alias] = {**properties[field], "title": alias.capitalize(),
                                 "description": f"Alias of {field}: " + properties[field].get("description", "")}
    return schema


ALIASES = {"executor": "job_builder"}
"""YAML names the loader accepts for a field (``TargetProfile``'s validation aliases)."""


def render_json_schema() -> str:
    """The schema as the exact text ``write_json_schema`` writes (stable key order, trailing newline)."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_json_schema(path: str | os.PathLike[str] = SCHEMA_PATH) -> Path:
    """Write the schema to ``path`` and return it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_json_schema(), encoding="utf-8")
    return target


def check_files(paths: Sequence[Path]) -> int:
    """Validate each profile file; print ``ok`` or its problems. 0 when every file is valid, 1 otherwise."""
    bad = 0
    for path in paths:
        try:
            load_profile(path)
        except HarnessError as exc:
            bad += 1
            print(str(exc), file=sys.stderr)
        else:
            print(f"{path}: ok")
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m harness.targets.profile_schema [--output PATH | --check FILE...]``; exit 2 on a usage error."""
    parser = argparse.ArgumentParser(
        prog=REGENERATE, description="Write the JSON Schema of target profile files, for editor completion "
                                     "(# yaml-language-server: $schema=...), or check profile files.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--output", "-o", metavar="PATH", default=None,
                       help=f"where to write it, or - for stdout (default: {SCHEMA_PATH})")
    group.add_argument("--check", nargs="+", type=Path, metavar="FILE",
                       help="validate these profile files instead (exit 1 when one is invalid)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.check:
        return check_files(args.check)
    if args.output == "-":
        sys.stdout.write(render_json_schema())
        return 0
    print(f"wrote {write_json_schema(args.output or SCHEMA_PATH)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
