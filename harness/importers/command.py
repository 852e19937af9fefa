"""``rlm-conformance import evalset PATH`` and ``rlm-conformance capture STORE --session ID``: test material
teams already have becomes scenario files.

Both load the target (``--target``, else ``[tool.rlm-conformance]``) to give each recorded model answer to its
agent, and write into the configured scenarios folder (``--out`` names another), every scenario checked against
the scenario schema before the first is written, none overwritten without ``--force``. ``import`` exits 0 when
every case was imported, 1 when some were refused (those written are usable); both exit 2 on a bad path, store,
target or file in the way.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import HarnessError

EXIT_OK, EXIT_REFUSED = 0, 1


class ImportCommandError(HarnessError):
    """The import cannot proceed: no target, or a file in the way."""


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="where the scenarios go (default: the first scenarios folder of [tool.rlm-conformance], "
                             "else scenarios)")
    parser.add_argument("--target", metavar="TARGET",
                        help="the agent the material was recorded on (default: target in [tool.rlm-conformance])")
    parser.add_argument("--profile", type=Path, metavar="PATH",
                        help="the target profile the scenarios name (default: profile in [tool.rlm-conformance])")
    parser.add_argument("--force", action="store_true", help="overwrite scenario files of the same name")


def add_import_parser(commands: Any) -> None:
    """Add ``import`` (with its ``evalset`` kind) and ``capture`` to the CLI's sub-commands."""
    parser = commands.add_parser(
        "import", help="turn test material teams already have into scenarios (ADK eval sets, adk conformance, "
                            "adk test)",
        description="Write scenarios from another format. `import evalset PATH`: every EvalCase of an ADK eval set "
                    "(.evalset.json, or the older .test.json; a file or a folder of them) becomes a scenario whose "
                    "script replays the recorded trajectory offline, with final_session_state as its expected "
                    "state. Cases that cannot be scripted faithfully are listed with the reason. Exit 0 when every "
                    "case was imported, 1 when some were refused, 2 on bad arguments. See docs/import.md.")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    evalset = kinds.add_parser("evalset", help="ADK eval sets (.evalset.json / .test.json)",
                               description="Import ADK eval set files into scenarios.")
    evalset.add_argument("path", type=Path, metavar="PATH", help="an eval set file, or a folder of them")
    _add_common(evalset)
    evalset.add_argument("--exact-state", action="store_true",
                         help="compare final_session_state as the whole state (state_match: exact); the default "
                              "compares the keys it names (subset)")
    evalset.add_argument("--sub-lm", type=Path, metavar="FILE",
                         help="the sub-model's answers to code that calls llm_query/llm_query_batched (no eval set "
                              "holds them): a YAML list for every such case, or a mapping of case name -> list")
    conformance = kinds.add_parser(
        "adk-conformance", help="ADK conformance cases (spec.yaml with what `adk conformance record` wrote)",
        description="Import ADK conformance cases: each folder with a spec.yaml and its generated-recordings.yaml "
                    "and generated-session.yaml becomes a scenario that serves the recorded model responses "
                    "verbatim and compares the run's session with the recorded one (check adk_recording_matches).")
    conformance.add_argument("path", type=Path, metavar="DIR", help="a case folder, or a folder of them")
    _add_common(conformance)
    adk_test = kinds.add_parser(
        "adk-test", help="`adk test` fixtures (tests/*.json in agent folders)",
        description="Import `adk test` fixtures: each tests/*.json of an agent folder under DIR (found as `adk test` "
                    "finds them) becomes a scenario that serves the stored model contents verbatim, sends its user "
                    "messages, and expects the state its events' deltas leave. The sub-model's answers to code that "
                    "calls llm_query are in no fixture: give them with --sub-lm.")
    adk_test.add_argument("path", type=Path, metavar="DIR", help="the folder `adk test` is given")
    _add_common(adk_test)
    adk_test.add_argument("--sub-lm", type=Path, metavar="FILE",
                          help="the sub-model's answers to code that calls llm_query/llm_query_batched: a YAML list "
                               "for every such fixture, or a mapping of scenario name or fixture stem -> list")

    capture = commands.add_parser(
        "capture", help="turn a stored session (an incident) into a scenario that replays it",
        description="Read one session from a session store (any store `audit` reads, read-only) and write a "
                    "scenario that replays its user turns with the model answers its events hold, scrubbed as "
                    "cassettes are. Exit 0 when written, 2 when the session cannot be found or scripted. See "
                    "docs/import.md.")
    capture.add_argument("store", metavar="STORE", help="the store, as `audit` takes it (a DuckDB/SQLite file or "
                                                        "an SQLAlchemy URL)")
    capture.add_argument("--session", required=True, metavar="ID", help="the session's id")
    capture.add_argument("--app", metavar="NAME", help="its app name, when several sessions share the id")
    capture.add_argument("--user", metavar="ID", help="its user id, when several sessions share the id")
    capture.add_argument("--name", metavar="NAME", help="the scenario's name (default: captured_<session id>)")
    capture.add_argument("--sub-lm", type=Path, metavar="FILE",
                         help="the sub-model's answers to code that calls llm_query/llm_query_batched (no stored "
                              "session holds them): a YAML list, or a mapping of scenario name or session id -> list")
    _add_common(capture)


@dataclass(frozen=True)
class _Destination:
    target: str
    out: Path
    profile: str | None  # the profile path as the scenarios name it (relative to out)


def _destination(args: argparse.Namespace, command: str) -> _Destination:
    from ..project_config import load_project_config

    project = load_project_config()
    target = args.target or project.target
    if not target:
        raise ImportCommandError(f"{command} needs the agent the material was recorded on, to give each model "
                                 f"answer to its agent. Fix: --target package.module:attr, or target in "
                                 f"[tool.rlm-conformance] (rlm-conformance init writes it).")
    out = Path(args.out or (project.scenarios[0] if project.scenarios else "scenarios"))
    profile_path = args.profile or project.profile
    profile = Path(os.path.relpath(Path(profile_path).resolve(), out.resolve())).as_posix() if profile_path else None
    return _Destination(target, out, profile)


def _app(target: str) -> Any:
    from ..init.project import load_target_app

    return load_target_app(target, allow_builtin=True)


def _write_all(items: list[tuple[str, str]], out: Path, *, force: bool) -> list[Path]:
    """Write ``(name, yaml text)`` scenarios into ``out``: every one parsed first, then written atomically."""
    from ..init.project import write_atomic
    from ..scenario.loader import parse_scenario

    paths = []
    for name, text in items:
        path = out / f"{name}.yaml"
        if path.exists() and not force:
            raise ImportCommandError(f"{path} exists. Fix: --name another, or --force to overwrite it.")
        parse_scenario(text, path=str(path), stem=name)
        paths.append(path)
    for path, (_, text) in zip(paths, items):
        write_atomic(path, text)
    return paths


def render(scenario: dict[str, Any], header: str) -> str:
    """The scenario's YAML under ``header`` (comment lines saying where it came from)."""
    body = yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=100)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def cmd_import(args: argparse.Namespace) -> int:
    from .adk_conformance import import_cases
    from .evalset import agent_tree, import_eval_sets

    where = _destination(args, f"import {args.kind}")
    existing = {p.stem for p in where.out.glob("*.yaml")} if where.out.is_dir() and not args.force else set()
    app = _app(where.target)
    if args.kind == "evalset":
        imported, refused = import_eval_sets(args.path, agent_tree(app), exact_state=args.exact_state,
                                             profile=where.profile, target=where.target, taken=existing,
                                             sub_lm=args.sub_lm)
    elif args.kind == "adk-test":
        from .adk_test import import_fixtures

        from google.adk.agents import LlmAgent

        from ..targets.agent_tree import tree_agents

        tree = agent_tree(app)
        nested = [agent.name for agent in tree_agents(app.root_agent)
                  if isinstance(agent, LlmAgent) and agent.name not in tree.llm_agents]
        imported, refused = import_fixtures(args.path, tree, profile=where.profile, target=where.target,
                                            taken=existing, sub_lm=args.sub_lm, nested_agents=nested)
    else:
        imported, refused = import_cases(args.path, agent_tree(app), app_name=app.name, profile=where.profile,
                                         target=where.target, taken=existing)
    header = (f"Imported from {{source}} by `rlm-conformance import {args.kind}` (target {{target}}).\n"
              "The script replays the recorded model answers; the agents' tools run for real.")
    paths = _write_all([(item.name, render(item.scenario, header.format(source=item.source, target=where.target)))
                        for item in imported], where.out, force=True)
    console = _console()
    for path, item in zip(paths, imported):
        console.print(f"wrote {path}", markup=False)
        for note in item.notes:
            console.print(f"  note: {note}", markup=False, style="yellow")
    for refusal in refused:
        console.print(f"refused {refusal}", markup=False, style="bold red")
    console.print(f"{len(imported)} case(s) imported into {where.out}, {len(refused)} refused.", markup=False)
    if imported:
        console.print(f"Run them: rlm-conformance run --llm-mode scripted --scenarios-dir {where.out}", markup=False)
    return EXIT_REFUSED if refused else EXIT_OK


def cmd_capture(args: argparse.Namespace) -> int:
    from .capture import find_session, scenario_from_session
    from .evalset import agent_tree, slug
    from .sub_model import load_sub_model_answers

    where = _destination(args, "capture")
    answers = load_sub_model_answers(args.sub_lm) if args.sub_lm is not None else None
    stored = find_session(args.store, args.session, app=args.app, user=args.user)
    name = args.name or f"captured_{slug(stored.session_id)}"
    scenario, notes = scenario_from_session(stored, agent_tree(_app(where.target)), name=name, source=args.store,
                                            profile=where.profile, target=where.target, sub_lm=answers,
                                            sub_lm_file=args.sub_lm)
    header = (f"Captured from {args.store}, session {stored.key}, by `rlm-conformance capture` (target "
              f"{where.target}).\nThe script replays the model answers its events hold; the invariant checks judge "
              f"the replay.")
    [path] = _write_all([(name, render(scenario, header))], where.out, force=args.force)
    console = _console()
    console.print(f"wrote {path} ({len(scenario['sessions'][0]['turns'])} turn(s))", markup=False)
    for note in notes:
        console.print(f"  note: {note}", markup=False, style="yellow")
    console.print(f"Run it: rlm-conformance run --llm-mode scripted --scenarios-dir {where.out} --scenario {name}",
                  markup=False)
    return EXIT_OK
