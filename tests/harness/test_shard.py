"""``--shard i/n`` (harness/scenario/shard.py): a split that is stable, balanced, and whose shards together are the
unsharded selection exactly; the same split for ``run`` and the pytest plugin."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli.main import main
from harness.scenario.loader import load_scenarios
from harness.scenario.shard import Shard, ShardError, parse_shard, scenario_costs, shard_scenarios, split
from tests.harness.inner_pytest import InnerProject

ROOT = Path(__file__).resolve().parents[2]

costs_strategy = st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8),
                                 st.floats(min_value=0, max_value=100, allow_nan=False) | st.sampled_from([0.1, 1.0]),
                                 max_size=40)


@settings(max_examples=300, deadline=None)
@given(costs=costs_strategy, count=st.integers(min_value=1, max_value=9), order_seed=st.integers(0, 1000))
def test_shards_partition_the_selection_whatever_order_the_names_come_in(costs: dict[str, float], count: int,
                                                                        order_seed: int) -> None:
    bins = split(costs, count)
    assert len(bins) == count
    flat = [name for b in bins for name in b]
    assert sorted(flat) == sorted(costs)  # every name once: union exact, no overlap
    shuffled = list(costs.items())
    random.Random(order_seed).shuffle(shuffled)
    assert split(dict(shuffled), count) == bins  # file order does not matter


@settings(max_examples=200, deadline=None)
@given(costs=costs_strategy, count=st.integers(min_value=1, max_value=6))
def test_greedy_longest_first_keeps_every_bin_within_one_unit_of_the_lightest(costs: dict[str, float],
                                                                              count: int) -> None:
    loads = [sum(costs[n] for n in b) for b in split(costs, count)]
    biggest = max(costs.values(), default=0.0)
    assert max(loads) - min(loads) <= biggest + 1e-9


def test_the_real_scenarios_split_in_three_balanced_and_whole() -> None:
    scenarios = load_scenarios(ROOT / "scenarios")
    shards = [shard_scenarios(scenarios, Shard(i, 3)) for i in (1, 2, 3)]
    names = [s.name for shard in shards for s in shard]
    assert sorted(names) == sorted(s.name for s in scenarios)
    assert all(shard == [s for s in scenarios if s in shard] for shard in shards)  # selection order kept
    costs = scenario_costs(scenarios)
    loads = [sum(costs[s.name] for s in shard) for shard in shards]
    assert max(loads) / min(loads) < 1.2, loads


def test_recorded_durations_replace_the_estimate() -> None:
    scenarios = load_scenarios(ROOT / "scenarios")[:4]
    slow = scenarios[3].name
    costs = scenario_costs(scenarios, {slow: 1000.0})
    assert costs[slow] == 1000.0
    assert [s.name for s in shard_scenarios(scenarios, Shard(1, 2), durations={slow: 1000.0})] == [slow]


@pytest.mark.parametrize("value", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""])
def test_a_bad_shard_names_the_flag_and_the_form(value: str) -> None:
    with pytest.raises(ShardError, match=r"--shard .*expected i/n with 1 <= i <= n.*--shard 1/3"):
        parse_shard(value)


def test_run_refuses_a_bad_shard_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--shard", "4/3"]) == 2
    assert "argument --shard: '4/3': expected i/n" in capsys.readouterr().err


def test_the_plugin_shards_split_the_collected_items_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = InnerProject.create(tmp_path, monkeypatch)
    project.write("pytest.ini", "[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    single = (ROOT / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")
    for name in ("alpha", "beta", "gamma", "delta", "epsilon"):
        project.write(f"scenarios/{name}.yaml", single.replace("name: single_delegation", f"name: {name}"))
    project.write("test_conformance.py", "def test_scenario(rlm_scenario):\n    pass\n\n\n"
                                         "def test_plain():\n    pass\n")

    def collected(*args: str) -> list[str]:
        out = project.run("--collect-only", "-q", "scenarios", "test_conformance.py", *args).stdout.lines
        return [line for line in out if "::" in line]

    everything = collected()
    shards = [collected("--rlm-shard", f"{i}/3") for i in (1, 2, 3)]
    assert sorted(n for s in shards for n in s) == sorted(everything)
    for shard in shards:  # a scenario's file item and its parametrized item run on the same machine
        names = {n.split("[")[1].rstrip("]") for n in shard if "[" in n}
        assert all(any(f"[{name}]" in n and n.startswith("scenarios/") for n in shard) for name in names)
    bad = project.run("--collect-only", "--shard", "2/1")
    assert bad.ret == 4 and "--shard/--rlm-shard: '2/1': expected i/n" in bad.stderr.str()


@pytest.mark.slow
def test_record_shards_write_each_cassette_once(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.harness.cli_project import SCENARIO

    (workdir / "scenarios" / "cli_two.yaml").write_text(SCENARIO.replace("name: cli_smoke", "name: cli_two"),
                                                        encoding="utf-8")
    written = []
    for i in (1, 2):
        assert main(["record", "--shard", f"{i}/2", "--no-progress", "-j", "1", "--reports-dir", f"r{i}"]) == 0
        written.append(sorted(p.name for p in (workdir / "cassettes").glob("*.yaml")))
    assert len(written[0]) == 1 and written[1] == ["cli_smoke.yaml", "cli_two.yaml"]
    assert main(["merge", "r1", "r2", "--reports-dir", "merged"]) in (0, 1)  # record's reports merge as run's do


def _explore_args(*argv: str):  # the parsed explore command line
    from harness.cli.main import build_parser

    return build_parser().parse_args(["explore", *argv])


def test_explore_shards_its_seed_scenarios_not_one_search() -> None:
    from harness.explore.command import seeds_in_shard

    seeds = [f"seeds/s{i}.yaml" for i in range(5)]
    flags = [w for s in seeds for w in ("--seed-scenario", s)]
    shards = [seeds_in_shard(_explore_args(*flags, "--shard", f"{i}/3")) for i in (1, 2, 3)]
    assert sorted(str(p) for shard in shards for p in shard) == seeds
    assert seeds_in_shard(_explore_args(*flags)) == [Path(s) for s in seeds]
    assert seeds_in_shard(_explore_args("--shard", "1/2")) == [None]  # the one search: shard 1's
    assert seeds_in_shard(_explore_args("--shard", "2/2")) == []


def test_an_explore_shard_without_a_seed_searches_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--shard", "2/2", "--no-database", "--no-progress"]) == 0
    assert "no seed scenario in this shard" in capsys.readouterr().out
