"""``rlm-conformance import evalset PATH``: ADK eval sets become scenario files, every refused case said.

The target (``--target``, else ``[tool.rlm-conformance]``) is loaded to attribute the trajectory to its agents;
scenarios are written into the configured scenarios folder (``--out`` names another), one YAML per case, all
checked against the scenario schema before the first is written, none overwritten without ``--force``. Exit 0
when every case was imported, 1 when some were refused (those written are usable), 2 on a bad path, target or
file in the way.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import HarnessError

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


class ImportCommandError(HarnessError):
    """The import cannot proceed: files in the way, or a scenario that would not load."""


def add_import_parser(commands: Any) -> None:
    """Add ``import`` (with its ``evalset`` kind) to the CLI's sub-commands."""
    parser = commands.add_parser(
        "import", help="turn test material teams already have into scenarios (ADK eval sets)",
        description="Write scenarios from another format. `import evalset PATH`: every EvalCase of an ADK eval set "
                    "(.evalset.json, or the older .test.json; a file or a folder of them) becomes a scenario whose "
                    "script replays the recorded trajectory offline, with final_session_state as its expected "
                    "state. Cases that cannot be scripted faithfully are listed with the reason. Exit 0 when every "
                    "case was imported, 1 when some were refused, 2 on bad arguments.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    evalset = kinds.add_parser("evalset", help="ADK eval sets (.evalset.json / .test.json)",
                               description="Import ADK eval set files into scenarios.")
    evalset.add_argument("path", type=Path, metavar="PATH", help="an eval set file, or a folder of them")
    evalset.add_argument("--out", type=Path, metavar="DIR",
                         help="where the scenarios go (default: the first scenarios folder of [tool.rlm-conformance], "
                              "else scenarios)")
    evalset.add_argument("--target", metavar="TARGET",
                         help="the agent the eval set was recorded on (default: target in [tool.rlm-conformance])")
    evalset.add_argument("--profile", type=Path, metavar="PATH",
                         help="the target profile the scenarios name (default: profile in [tool.rlm-conformance])")
    evalset.add_argument("--exact-state", action="store_true",
                         help="compare final_session_state as the whole state (state_match: exact); the default "
                              "compares the keys it names (subset)")
    evalset.add_argument("--force", action="store_true", help="overwrite scenario files of the same name")


def cmd_import(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..init_project import load_target_app, write_atomic
    from ..project_config import load_project_config
    from ..scenario.loader import parse_scenario
    from .evalset import agent_tree, import_eval_sets

    project = load_project_config()
    target = args.target or project.target
    if not target:
        raise ImportCommandError("import evalset needs the agent the eval set was recorded on, to give each model answer "
                           "to its agent. Fix: --target package.module:attr, or target in [tool.rlm-conformance] "
                           "(rlm-conformance init writes it).")
    out = args.out or (project.scenarios[0] if project.scenarios else Path("scenarios"))
    profile_path = args.profile or project.profile
    profile = Path(os.path.relpath(Path(profile_path).resolve(), Path(out).resolve())).as_posix() \
        if profile_path else None
    tree = agent_tree(load_target_app(target, allow_builtin=True))
    existing = {p.stem for p in Path(out).glob("*.yaml")} if Path(out).is_dir() else set()
    imported, refused = import_eval_sets(args.path, tree, exact_state=args.exact_state, profile=profile,
                                         taken=() if args.force else existing)
    texts = {}
    for item in imported:  # every file checked before the first is written: nothing half-imported
        text = render(item, target)
        parse_scenario(text, path=str(Path(out) / f"{item.name}.yaml"), stem=item.name)
        texts[Path(out) / f"{item.name}.yaml"] = text
    for path, text in texts.items():
        write_atomic(path, text)
    console = Console(highlight=False, soft_wrap=True)
    for path in texts:
        console.print(f"wrote {path}", markup=False)
    for refusal in refused:
        console.print(f"refused {refusal}", markup=False, style="bold red")
    console.print(f"{len(imported)} case(s) imported into {out}, {len(refused)} refused.", markup=False)
    if imported:
        console.print(f"Run them: rlm-conformance run --llm-mode scripted --scenarios-dir {out}", markup=False)
    return EXIT_REFUSED if refused else EXIT_OK


def render(item: Any, target: str) -> str:
    """The scenario's YAML, with a header saying where it came from and how to regenerate it."""
    header = (f"# Imported from {item.source} by `rlm-conformance import evalset` (target {target}).\n"
              f"# The script replays the recorded trajectory; the agents' tools run for real.\n")
    body = yaml.safe_dump(item.scenario, sort_keys=False, allow_unicode=True, width=100)
    return header + body
