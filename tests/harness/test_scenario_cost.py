"""``run -j N`` hands the longest expected scenarios out first (harness/scenario/cost.py)."""

from __future__ import annotations

from pathlib import Path

from harness.scenario.cost import expected_seconds, longest_first
from harness.scenario.loader import load_scenarios

ROOT = Path(__file__).resolve().parents[2]


def test_declared_waits_and_more_steps_come_first_ties_keep_file_order() -> None:
    by_name = {s.name: s for s in load_scenarios(ROOT / "scenarios")}
    short, waits, long_talk = by_name["exit_loop"], by_name["executor_timeout"], by_name["history_long_budget"]
    assert expected_seconds(waits) > expected_seconds(long_talk) > expected_seconds(short)
    assert longest_first([short, long_talk, waits]) == [2, 1, 0]
    assert longest_first([short, short, short]) == [0, 1, 2]
