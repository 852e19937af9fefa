"""A finding as an ordinary scenario file: the minimal plan, its script cut to the steps the target used, run
once more under its own name to confirm it fails the same check (run.py runs the confirmations, all at once), and
written with a comment that names the check, the seed and the commands."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from ..init.project import write_atomic
from ..scenario.models import Scenario
from .engine import Finding
from .library import Library
from .plan import to_scenario, trimmed
from .target_model import TargetModel

PROG = "rlm-conformance"


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def scenario_name(target: str, check: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", f"found_{target}_{check}".lower()).strip("_")


def relative(path: Path, start: Path | None = None) -> str:
    """``path`` relative to ``start`` (default: the current folder), POSIX style: a found scenario is committed,
    so it names no folder of the machine it was found on."""
    return Path(os.path.relpath(Path(path).resolve(), (start or Path.cwd()).resolve())).as_posix()


def _profile_ref(profile_path: Path | None, out_dir: Path) -> str | None:
    """The scenario's ``profile:``, which is read relative to the scenario file."""
    return None if profile_path is None else relative(profile_path, out_dir)


def render(scenario: Scenario, finding: Finding, *, seed: int, out_dir: Path, explore_command: str,
           evidence: str | None = None) -> str:
    """The scenario file: a header (the check, the evidence of the written scenario's own run — else the kind of
    evidence the search saw —, what it shrank to, how to reproduce and keep it), then the scenario."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data["sessions"] = [{"user": spec.user, **dumped} for spec, dumped in zip(scenario.sessions, data["sessions"])]
    reproduce = shlex.join([PROG, "crash", scenario.name, "--scenarios-dir", relative(out_dir)] if scenario.crash
                           else [PROG, "run", "--scenario", scenario.name, "--scenarios-dir", relative(out_dir),
                                 "--llm-mode", "scripted"])
    header = [f"# Found by `{PROG} explore` (seed {seed}): this scenario fails the check {finding.check}.",
              f"#   evidence: {evidence}" if evidence else f"#   kind of evidence: {finding.shape}",
              f"#   shrunk to: {finding.plan.describe()}",
              f"# Reproduce: {reproduce}",
              f"# Found with: {explore_command}",
              f"# Keep it as a regression test: move it into your scenarios folder, `{PROG} record --scenario "
              f"{scenario.name} --scenarios-dir <that folder>`, then replay in CI."]
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(header) + "\n" + body


def candidates(finding: Finding, model: TargetModel, library: Library, *, out_dir: Path, profile_path: Path | None,
               target_name: str, used: dict[str, int]) -> tuple[Scenario, Scenario]:
    """The scenario to write for ``finding``: its script cut to the steps used (``used``: what each agent asked for
    in its minimal run) and, should that not fail the same check, the whole one."""
    name = scenario_name(target_name, finding.check)
    full = to_scenario(finding.plan, model, library, name=name,
                       description=f"Found by explore: fails {finding.check} ({finding.plan.describe()}).",
                       target=model.spec, profile=_profile_ref(profile_path, out_dir))
    return trimmed(full, used), full


def write_finding(finding: Finding, scenario: Scenario, *, reproduced: bool, seed: int, out_dir: Path,
                  explore_command: str, evidence: str | None = None) -> Path:
    """Write ``scenario`` for ``finding`` into ``out_dir`` (``reproduced``: a re-run failed the same check;
    ``evidence``: that run's first line of the check's evidence)."""
    path = out_dir / f"{scenario.name}.yaml"
    finding.reproduced = reproduced
    write_atomic(path, render(scenario, finding, seed=seed, out_dir=out_dir, explore_command=explore_command,
                              evidence=evidence))
    finding.path = path
    finding.written_turns = sum(len(s.turns) for s in scenario.sessions)
    finding.written_steps = sum(len(steps) for steps in scenario.script.values())
    return path
