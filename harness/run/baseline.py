"""Accepted findings: a baseline file a team commits, so a known, accepted failure does not keep CI red.

Each entry is a check, where it fails (a scenario's name, or ``*`` for every scenario) and why it is accepted::

    accepted:
      - check: executor_confined
        where: found_my_agent_executor_confined
        reason: we confine the executor at the container, not in the process

``run --baseline FILE`` and ``explore --baseline FILE --fail-on-find`` fail only on findings no entry accepts,
list the ones accepted, and name every entry whose finding no longer occurs where it was judged (a stale entry to
remove). ``--write-baseline FILE`` writes the current findings into the file (entries already there keep their
reasons; new ones get ``NEW_REASON``, to replace). A finding is a pair (check, where); whether a run was judged at
all (a scenario that could not run, a turn that raised) is the caller's: a baseline accepts failed checks only.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..result import ScenarioResult

ANYWHERE = "*"
NEW_REASON = "TODO: say why this finding is accepted"
_HEADER = ("# Accepted findings (rlm-conformance run/explore --baseline FILE): each a check, where it fails (a "
           "scenario's\n# name, or '*' for every scenario) and why it is accepted. Written by --write-baseline; "
           "commit it.\n")


@dataclass(frozen=True)
class Accepted:
    check: str
    where: str
    reason: str

    def covers(self, check: str, where: str) -> bool:
        return self.check == check and self.where in (ANYWHERE, where)

    def describe(self) -> str:
        place = "every scenario" if self.where == ANYWHERE else self.where
        return f"{self.check} in {place} ({self.reason})"


@dataclass(frozen=True)
class Baseline:
    path: Path
    entries: tuple[Accepted, ...] = ()

    def accepting(self, check: str, where: str) -> Accepted | None:
        return next((entry for entry in self.entries if entry.covers(check, where)), None)


@dataclass(frozen=True)
class Judgement:
    """What a run's findings are under a baseline."""

    unaccepted: tuple[tuple[str, str], ...]  # (check, where) no entry accepts: these fail
    accepted: tuple[tuple[Accepted, str], ...]  # each accepted finding with the entry that accepts it
    stale: tuple[Accepted, ...]  # entries judged this time whose finding did not occur

    def lines(self, baseline: Baseline) -> list[str]:
        """What the console says about the baseline (nothing when it played no part)."""
        out = [f"accepted by {baseline.path.as_posix()}: {entry.check} in {where} ({entry.reason})"
               for entry, where in self.accepted]
        out += [f"no longer occurs: {entry.describe()}: remove it from {baseline.path.as_posix()}"
                for entry in self.stale]
        return out


def load_baseline(path: Path) -> Baseline:
    """The baseline in ``path``; every problem names the file, the entry and the field, and the fix."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"--baseline {path}: no such file. Fix: write one with --write-baseline {path}.") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"--baseline {path}: cannot be read as YAML ({exc}).") from None
    if data is None:
        return Baseline(path)
    if not isinstance(data, dict) or not isinstance(data.get("accepted", []), list):
        raise ConfigError(f"--baseline {path}: expected a mapping with 'accepted:', a list of entries (check, where, "
                          f"reason). Fix: see docs/explore.md (Accepted findings).")
    entries = []
    for index, entry in enumerate(data.get("accepted") or []):
        fields = {}
        for name in ("check", "where", "reason"):
            value = entry.get(name) if isinstance(entry, dict) else None
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"--baseline {path}: accepted[{index}].{name} is missing or not text. Fix: give "
                                  f"each entry check (a check's name), where (a scenario's name, or '*') and reason.")
            fields[name] = value.strip()
        entries.append(Accepted(**fields))
    return Baseline(path, tuple(entries))


def judge(findings: Iterable[tuple[str, str]], baseline: Baseline | None, *, judged: Iterable[str],
          checks: Iterable[str] | None = None) -> Judgement:
    """``findings``: (check, where) pairs; ``judged``: the places this run judged, ``checks``: the checks it
    judged (None: all) — an entry for a place or check that did not run says nothing, so it is not stale."""
    findings = list(dict.fromkeys(findings))
    if baseline is None:
        return Judgement(unaccepted=tuple(findings), accepted=(), stale=())
    accepted, unaccepted = [], []
    for check, where in findings:
        entry = baseline.accepting(check, where)
        if entry is None:
            unaccepted.append((check, where))
        else:
            accepted.append((entry, where))
    places, searched = set(judged), None if checks is None else set(checks)
    stale = tuple(entry for entry in baseline.entries
                  if (entry.where == ANYWHERE or entry.where in places)
                  and (searched is None or entry.check in searched)
                  and not any(entry.covers(check, where) for check, where in findings))
    return Judgement(unaccepted=tuple(unaccepted), accepted=tuple(accepted), stale=stale)


def write_baseline(path: Path, findings: Iterable[tuple[str, str]]) -> Baseline:
    """Accept ``findings``: the file's entries (reasons kept) plus one per finding none of them accepts."""
    from ..files import write_atomic

    kept = load_baseline(path) if path.exists() else Baseline(path)
    entries = list(kept.entries)
    for check, where in dict.fromkeys(findings):
        if kept.accepting(check, where) is None:
            entries.append(Accepted(check=check, where=where, reason=NEW_REASON))
    body = yaml.safe_dump({"accepted": [{"check": e.check, "where": e.where, "reason": e.reason} for e in entries]},
                          sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (_HEADER + body).encode("utf-8"), durable=True)
    return Baseline(path, tuple(entries))


HARNESS_ROWS = frozenset({"cassette", "snapshot", "script"})
"""``run``'s rows about the harness's own files and script, not the target: never accepted (re-record instead)."""


def run_findings(results: Iterable[ScenarioResult]) -> list[tuple[str, str]]:
    """(check, scenario) of every failed check of ``run``'s results (the harness's own rows aside)."""
    from ..checks.base import Status

    return [(c.name, r.scenario) for r in results for c in r.checks
            if c.status is Status.FAIL and c.name not in HARNESS_ROWS]


def run_ok(results: Iterable[ScenarioResult], judgement: Judgement) -> bool:
    """``run``'s verdict under the baseline: every scenario passed, or failed only checks the baseline accepts (a
    scenario that could not run, a turn that raised, a harness row or a declared divergence is judged as before)."""
    from ..checks.base import Status

    accepted = {(entry.check, where) for entry, where in judgement.accepted}
    return all(r.ok or (r.verdict == "fail" and r.declared is None and all(
        c.name not in HARNESS_ROWS and (c.name, r.scenario) in accepted for c in r.checks if c.status is Status.FAIL))
        for r in results)


def add_arguments(parser: argparse.ArgumentParser, *, what: str) -> None:
    """``--baseline`` and ``--write-baseline`` (``what``: what they gate, for the help)."""
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help=f"accepted findings (check, where, reason): {what} fails only on the others, lists the "
                             "accepted ones and names those that no longer occur")
    parser.add_argument("--write-baseline", type=Path, metavar="FILE",
                        help="write this run's findings into FILE as accepted (entries already there keep their "
                             "reasons; give each new one its reason), then judge with it")


def chosen(args: argparse.Namespace) -> Baseline | None:
    """The baseline ``--baseline`` names (read before anything runs: a bad file is a usage error), or the one
    ``--write-baseline`` will extend."""
    path = args.baseline or args.write_baseline
    if path is None or (args.baseline is None and not path.exists()):
        return None
    return load_baseline(path)


def settle(args: argparse.Namespace, baseline: Baseline | None, findings: list[tuple[str, str]],
           judged: Iterable[str], checks: Iterable[str] | None = None) -> tuple[Baseline | None, Judgement]:
    """After the run: write ``--write-baseline`` if asked (from ``findings``), then judge ``findings``."""
    if args.write_baseline is not None:
        baseline = write_baseline(args.write_baseline, findings)
    return baseline, judge(findings, baseline, judged=judged, checks=checks)


def report_lines(args: argparse.Namespace, baseline: Baseline | None, judgement: Judgement) -> list[str]:
    lines = [] if baseline is None else judgement.lines(baseline)
    if args.write_baseline is not None:
        lines.append(f"wrote {len(baseline.entries) if baseline else 0} accepted finding(s) to "
                     f"{args.write_baseline.as_posix()}: give each new entry its reason, then commit it")
    return lines
