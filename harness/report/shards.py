"""Shard reports joined into the report the unsharded run would have written (``rlm-conformance merge``).

A run with ``--shard i/n`` records in its report's ``extra`` the shard's label (``shard``), the size of the
unsharded selection (``shard_selection``) and where its scenarios stood in it (``shard_positions``): the merge puts
every result back at its place, so each format renders as the unsharded run's. It refuses what would make a report
no unsharded run could have written: a report that is not a shard's, two shards of one label or holding one
scenario, shards of different splits, settings, targets or ADK lines, and a missing shard (named by its label).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError
from ..result import RunReport, ScenarioResult

SHARD_KEYS = ("shard", "shard_selection", "shard_positions")
SAME_KEYS = ("command", "target", "llm_mode", "session_service", "backend", "executor", "scenarios_dir")
"""What every shard must have been run with (as ``extra`` records it), besides the tool version and ADK line."""


class ShardMergeError(HarnessError):
    """Shard reports that do not make one run's report; the message names the file and what to pass instead."""


@dataclass(frozen=True)
class ShardReport:
    path: Path  # the conformance.json it was read from
    report: RunReport


def adk_line(version: str) -> str:
    """``"2.13.0"`` -> ``"2.x"``: the supported lines differ in behaviour, releases within a line do not."""
    return version.split(".", 1)[0] + ".x" if version[:1].isdigit() else version


def merge_shards(shards: Sequence[ShardReport]) -> RunReport:
    """One report of every shard's results in the unsharded order; a ``ShardMergeError`` naming the file else."""
    if not shards:
        raise ShardMergeError("no shard reports to merge. Fix: pass each shard's reports folder.")
    first = shards[0]
    labels: dict[str, Path] = {}
    count = selection = 0
    for shard in shards:
        extra = shard.report.extra
        if "shard" not in extra:
            raise ShardMergeError(f"{shard.path}: not a shard's report (no shard label in it). Fix: pass the reports "
                                  f"folders of runs made with --shard i/n.")
        index, _, of = extra["shard"].partition("/")
        try:
            shard_count, shard_selection = int(of), int(extra["shard_selection"])
            [int(p) for p in filter(None, extra.get("shard_positions", "").split(","))]
        except (KeyError, ValueError):
            raise ShardMergeError(f"{shard.path}: the shard label {extra['shard']!r} or its positions are damaged. "
                                  f"Fix: run that shard again.") from None
        if shard is first:
            count, selection = shard_count, shard_selection
        _same(first, shard, "number of shards", str(count), str(shard_count))
        _same(first, shard, "selection (scenarios before sharding)", str(selection), str(shard_selection))
        for key in SAME_KEYS:
            _same(first, shard, key, first.report.extra.get(key, ""), extra.get(key, ""))
        _same(first, shard, "tool version", first.report.tool_version, shard.report.tool_version)
        _same(first, shard, "ADK line", adk_line(first.report.extra.get("adk", "")), adk_line(extra.get("adk", "")))
        if extra["shard"] in labels:
            raise ShardMergeError(f"{shard.path}: shard {extra['shard']} overlaps {labels[extra['shard']]}, the same "
                                  f"shard. Fix: pass each shard's folder once.")
        labels[extra["shard"]] = shard.path
    missing = [f"{i}/{count}" for i in range(1, count + 1) if f"{i}/{count}" not in labels]
    if missing:
        raise ShardMergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing (got "
                              f"{', '.join(sorted(labels))}). Fix: pass the reports folder of each run made with "
                              f"{', '.join('--shard ' + m for m in missing)}.")
    return _joined(shards, selection)


def _same(first: ShardReport, other: ShardReport, what: str, expected: str, got: str) -> None:
    if expected != got:
        raise ShardMergeError(f"{other.path}: {what} {got!r}, but {first.path} has {expected!r}: shards of different "
                              f"runs cannot be merged. Fix: run every shard with the same settings and versions.")


def _joined(shards: Sequence[ShardReport], selection: int) -> RunReport:
    placed: dict[int, tuple[ScenarioResult, ShardReport]] = {}
    seen: dict[str, Path] = {}
    for shard in shards:
        where = [int(p) for p in filter(None, shard.report.extra.get("shard_positions", "").split(","))]
        if len(where) != len(shard.report.results):
            raise ShardMergeError(f"{shard.path}: {len(shard.report.results)} results for {len(where)} positions. "
                                  f"Fix: run that shard again.")
        for position, result in zip(where, shard.report.results):
            if result.scenario in seen or position in placed:
                raise ShardMergeError(f"{shard.path}: scenario {result.scenario!r} is also in "
                                      f"{seen.get(result.scenario, placed.get(position, (None, shard))[1].path)}: "
                                      f"overlapping shards. Fix: merge shards of one split (--shard i/n, same n and "
                                      f"selection).")
            seen[result.scenario] = shard.path
            placed[position] = (result, shard)
    if sorted(placed) != list(range(selection)):
        gaps = [str(i) for i in range(selection) if i not in placed]
        raise ShardMergeError(f"the shards hold {len(placed)} of the {selection} scenarios selected (positions "
                              f"{', '.join(gaps[:10])} missing). Fix: run every shard of the same selection.")
    order = [placed[i] for i in range(selection)]
    first = shards[0].report
    extra = {k: v for k, v in first.extra.items() if k not in SHARD_KEYS}
    extra["shards"] = ", ".join(sorted((s.report.extra["shard"] for s in shards), key=lambda x: int(x.split("/")[0])))
    machines = list(dict.fromkeys(s.report.machine for s in shards))
    return RunReport(results=tuple(r for r, _ in order), started_at=min(s.report.started_at for s in shards),
                     machine="; ".join(machines), tool_version=first.tool_version, extra=extra)
