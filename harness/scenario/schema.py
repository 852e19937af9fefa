"""JSON Schema of the scenario format, for editors (yaml-language-server) and other tools.

``python -m harness.scenario.schema`` rewrites ``scenarios/scenario.schema.json``;
a test fails when the committed file and the models disagree.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.scenario.models import Scenario

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "scenarios" / "scenario.schema.json"
"""Where the repository ships the schema."""

REGENERATE = "python -m harness.scenario.schema"
"""The command that rewrites ``SCHEMA_PATH``."""


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a scenario file."""
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "scenario.schema.json", **schema}


def render_json_schema() -> str:
    """The schema as the exact text ``write_json_schema`` writes (stable key order, trailing newline)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_json_schema(path: str | os.PathLike[str] = SCHEMA_PATH) -> Path:
    """Write the schema to ``path`` and return it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_json_schema(), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.scenario.schema [PATH]``: write the schema (default: the shipped file)."""
    args = sys.argv[1:] if argv is None else argv
    print(f"wrote {write_json_schema(args[0] if args else SCHEMA_PATH)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
