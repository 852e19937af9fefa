"""One settings resolver for every verb: a flag, else ``[tool.rlm-conformance]`` (harness/project_config.py),
else the built-in default; and the run options the settings make."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..run.options import RunOptions


def settle(args: argparse.Namespace) -> None:
    """Fill every setting the command line left out from ``[tool.rlm-conformance]`` (harness/project_config.py),
    else the built-in default. ``scenarios_dir`` becomes a list (the table may name several)."""
    from ..project_config import DEFAULT_ORIGIN, load_project_config, resolve

    args.configured_by = {}  # flag -> where its value came from, when that is the pyproject table
    if args.command not in ("run", "record", "list", "export", "explore", "crash"):
        return
    project = load_project_config()

    def fill(name: str, key: str, *, table: object = ..., default: object = ...) -> None:
        if not hasattr(args, name):
            return
        flag = "--" + name.replace("_", "-")
        value, origin = resolve(key, (getattr(args, name), flag),
                                (getattr(project, key) if table is ... else table, project.origin(key)),
                                default=default)
        setattr(args, name, value)
        if origin not in (flag, DEFAULT_ORIGIN):
            args.configured_by[flag] = origin

    fill("scenarios_dir", "scenarios")
    args.scenarios_dir = ([args.scenarios_dir] if isinstance(args.scenarios_dir, str)
                          else [str(p) for p in args.scenarios_dir])
    fill("target", "target")
    fill("session_service", "session_service")
    fill("profile", "profile")
    fill("cassette_dir", "cassettes")
    fill("snapshot_dir", "snapshots")
    fill("backend", "backend")
    if args.command in ("export", "crash"):  # what it exports (crashes) is what the script makes the agent do
        args.llm_mode = "scripted"
    elif args.command == "record":  # recording needs a model: a configured replay means "the scripted one"
        fill("llm_mode", "llm_mode", table=project.llm_mode if project.llm_mode != "replay" else None,
             default="scripted")
    else:
        fill("llm_mode", "llm_mode")


def run_options(args: argparse.Namespace, *, record: bool) -> RunOptions:
    from ..llm.modes import LlmMode
    from ..run.options import RunOptions
    from ..targets.profile import load_profile

    profile = load_profile(args.profile) if args.profile is not None else None
    return RunOptions(target=args.target, llm_mode=LlmMode(args.llm_mode), record=record,
                      cassette_dir=Path(args.cassette_dir), session_service=args.session_service, profile=profile,
                      profile_path=args.profile, profile_is_default="--profile" in getattr(args, "configured_by", {}),
                      backend=args.backend, databricks_live=args.databricks_live, executor=args.executor,
                      allow_drift=args.allow_drift, require_confinement=args.require_confinement,
                      allow_script_misfit=getattr(args, "allow_script_misfit", False))
