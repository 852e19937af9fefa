"""``rlm-conformance export``: scenarios written as an ADK eval set or as ``adk test`` fixtures."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..run.scenario_run import configure_logging
from .common import EXIT_FAILED, EXIT_OK, add_selection, add_target, load_selected, stdout_console
from .run import preflight
from .settings import run_options


PARSER: dict[str, Any] = {
    "name": "export",
    "help": "write scenarios in another format (an ADK eval set, `adk test` fixtures)",
    "description": "`export evalset --out FILE`: run the selected scenarios (all of the configured folder by "
                   "default) once in scripted mode and write an ADK eval set of what they did — user turns, tool "
                   "trajectory with authors, final responses, initial and final session state — that ADK's own "
                   "loader reads and `adk eval` runs. Exit 0 when every scenario was exported, 1 when some could "
                   "not be, 2 on bad arguments. `export adk-test` (ADK 2.x): the same runs written as `adk "
                   "test` fixtures into the agent folder --target names (<folder>/tests/<scenario>.json), which "
                   "ADK's own runner replays. "
                   "See docs/import.md.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(export: argparse.ArgumentParser) -> None:
    export.add_argument("kind", choices=("evalset", "adk-test"), metavar="KIND", help="evalset or adk-test")
    export.add_argument("--out", type=Path, metavar="FILE",
                        help="evalset: the eval set file to write (e.g. tests/eval/conformance.evalset.json); "
                             "adk-test takes no --out (the fixtures go into the target's agent folder)")
    add_selection(export)
    add_target(export, modes=("scripted",), default_mode="scripted")


def run(args: argparse.Namespace) -> int:
    from ..importers.export import export_eval_set
    from ..init.project import write_atomic

    configure_logging(args.log_level)
    if args.kind == "adk-test":
        from ..importers.adk_test_export import cmd_export_adk_test

        return cmd_export_adk_test(args, load_selected, run_options, preflight, stdout_console())
    if args.out is None:
        raise HarnessError("export evalset needs --out FILE (the eval set to write).")
    scenarios = load_selected(args.scenarios_dir, args.scenario, args.substring)
    options = run_options(args, record=False)
    preflight(scenarios, options)
    console = stdout_console()
    eval_set_id = args.out.name.removesuffix(".json").removesuffix(".evalset").removesuffix(".test")
    eval_set, refused = export_eval_set(scenarios, options, eval_set_id=eval_set_id,
                                        log=lambda name, result: console.print(f"ran {name}: {result.status}",
                                                                               markup=False, soft_wrap=True))
    if eval_set.eval_cases:
        write_atomic(args.out, eval_set.model_dump_json(indent=2, exclude_none=True) + "\n")
        console.print(f"wrote {args.out}: {len(eval_set.eval_cases)} eval case(s)", markup=False, soft_wrap=True)
    else:
        console.print(f"nothing written to {args.out}: no scenario could be exported", markup=False, soft_wrap=True)
    for refusal in refused:
        console.print(f"not exported {refusal}", markup=False, style="bold red", soft_wrap=True)
    return EXIT_FAILED if refused or not eval_set.eval_cases else EXIT_OK


COMMANDS = {"export": run}
