"""``--shard i/n``: one stable split of a selection over ``n`` CI machines, for ``run``, ``record``, ``explore`` and
the pytest plugin alike.

Each unit (a scenario, by name) has a cost: by default ``cost.expected_seconds`` (turns, script steps, declared
waits), or a duration a previous report recorded (``durations``). Units are dealt longest first, each to the bin
with the least cost so far (greedy longest-processing-time); equal costs and equal bins are ordered by name and
bin number, so the split depends only on the names and costs: not on file order, the machine or the process.
Every unit lands in exactly one bin, so the shards' union is the unsharded selection.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import HarnessError

if TYPE_CHECKING:
    from .models import Scenario

T = TypeVar("T")


class ShardError(HarnessError):
    """A ``--shard`` value that is not ``i/n`` with 1 <= i <= n."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(value: str, *, flag: str = "--shard") -> Shard:
    """``"2/3"`` -> ``Shard(2, 3)``; anything else is a ``ShardError`` naming ``flag`` and the fix."""
    index, sep, count = value.strip().partition("/")
    if sep and index.strip().isdigit() and count.strip().isdigit():
        shard = Shard(int(index), int(count))
        if 1 <= shard.index <= shard.count:
            return shard
    raise ShardError(f"{flag} {value!r}: expected i/n with 1 <= i <= n (the 1-based shard number and the number of "
                     f"shards), e.g. {flag} 1/3 .. {flag} 3/3 on three machines.")


def shard_arg(value: str) -> Shard:
    """``parse_shard`` as an argparse ``type``: argparse prints the message and exits 2."""
    try:
        return parse_shard(value)
    except ShardError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--shard ")) from None


def split(costs: Mapping[str, float], count: int) -> list[list[str]]:
    """``count`` bins of the names in ``costs``: longest first, each to the lightest bin (ties: name, bin number)."""
    if count < 1:
        raise ShardError(f"cannot split into {count} shards: use --shard i/n with n >= 1.")
    loads = [0.0] * count
    bins: list[list[str]] = [[] for _ in range(count)]
    for name in sorted(costs, key=lambda n: (-costs[n], n)):
        lightest = min(range(count), key=lambda b: (loads[b], b))
        bins[lightest].append(name)
        loads[lightest] += costs[name]
    return bins


def in_shard(costs: Mapping[str, float], shard: Shard) -> set[str]:
    """The names ``shard`` runs."""
    return set(split(costs, shard.count)[shard.index - 1])


def scenario_costs(scenarios: Sequence[Scenario], durations: Mapping[str, float] | None = None) -> dict[str, float]:
    """Each scenario's cost: its recorded duration when ``durations`` holds one, else its expected seconds."""
    from .cost import expected_seconds

    durations = durations or {}
    return {s.name: float(durations[s.name]) if s.name in durations else expected_seconds(s) for s in scenarios}


def shard_scenarios(scenarios: Sequence[Scenario], shard: Shard | None, *,
                    durations: Mapping[str, float] | None = None) -> list[Scenario]:
    """The scenarios ``shard`` runs, in their selection order (all of them without a shard)."""
    if shard is None:
        return list(scenarios)
    chosen = in_shard(scenario_costs(scenarios, durations), shard)
    return [s for s in scenarios if s.name in chosen]


def durations_from(path: Path) -> dict[str, float]:
    """Scenario name -> ``duration_s`` from a previous run's JSON report (only those two fields are read)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(r["scenario"]): float(r["duration_s"]) for r in data["results"]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ShardError(f"--shard-durations {path}: not a readable conformance.json ({type(exc).__name__}: "
                         f"{exc}). Fix: pass the conformance.json a previous run wrote, or drop the flag.") from None


def positions(names: Sequence[str], chosen: Sequence[str]) -> str:
    """Where ``chosen`` stand in the unsharded selection ``names``: comma-separated indices, for the report, so that
    ``merge`` restores the unsharded order and sees a gap or an overlap."""
    where = {name: i for i, name in enumerate(names)}
    return ",".join(str(where[name]) for name in chosen)
