"""``rlm-conformance doctor``: the setup checked before a recording, with what to fix."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import HarnessError
from .common import add_backend_settings, stdout_console


PARSER: dict[str, Any] = {
    "name": "doctor",
    "help": "check the setup before recording; --databricks checks the workspace",
    "description": "Check what a recording needs and say what to fix. Without --databricks: the local install "
                   "and the project in the working folder ([tool.rlm-conformance], profile, scenarios, targets, "
                   "cassettes). "
                   "With --databricks: the workspace of DATABRICKS_HOST / DATABRICKS_TOKEN (or "
                   "DATABRICKS_CONFIG_PROFILE) and the backend's RLM_DATABRICKS_* settings — identity, warehouse, "
                   "catalog, schema, tables, volume, privileges, Job_B compute and payload, the llm_query secret — "
                   "read-only unless --write-probe. Exit 0 when nothing would break a recording (warnings "
                   "allowed), 1 when something would, 2 on bad arguments. See docs/databricks.md.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--databricks", action="store_true", help="check the Databricks workspace and settings")
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON instead of a table")
    doctor.add_argument("--write-probe", action="store_true",
                        help="with --databricks: also upload a small file under <volume root>/_rlm/ and delete it")
    add_backend_settings(doctor)


def run(args: argparse.Namespace) -> int:
    from ..doctor import render_json, render_table, run_local_doctor

    if args.write_probe and not args.databricks:
        raise HarnessError("--write-probe checks the Databricks volume: use it with --databricks.")
    if args.databricks:
        from ..extras import require_extra
        from ..targets.plugins import backend as plugin_backend

        backend = plugin_backend("databricks")
        if backend.doctor is None:
            raise HarnessError("no installed target plugin has a doctor for the databricks backend.")
        if backend.extra is not None:
            require_extra(backend.extra, "doctor --databricks")
        report = backend.doctor(args=args, write_probe=args.write_probe)
    else:
        report = run_local_doctor()
    if args.json:
        sys.stdout.write(render_json(report))
    else:
        render_table(report, stdout_console())
    return report.exit_code


COMMANDS = {"doctor": run}
