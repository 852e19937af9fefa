"""Scenario YAML files as pytest collectors: ``pytest scenarios/`` yields ``scenario[<name>]`` items.

Each item is an ordinary ``pytest.Function`` (of ``scenario`` below) so fixtures, ``-k``, xdist and
syrupy's ``snapshot`` fixture work on it exactly as on ``tests/test_conformance.py::test_scenario``;
the two only differ in how the scenario reaches the ``rlm_scenario`` fixture (stash vs parametrize).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .session import SCENARIO, SESSION
from .verdict import assert_conforms

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from harness.result import ScenarioResult


def scenario(rlm_scenario_result: ScenarioResult, snapshot: SnapshotAssertion) -> None:
    """The test every scenario file runs: its checks pass and its normalized trace matches the snapshot."""
    assert_conforms(rlm_scenario_result, snapshot)


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        loaded = self.config.stash[SESSION].load(self.path)
        item = ScenarioItem.from_parent(self, name=f"scenario[{loaded.name}]", callobj=scenario)
        item.stash[SCENARIO] = loaded
        for mark in self.config.stash[SESSION].marks(loaded):
            item.add_marker(mark)
        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from ..errors import HarnessError

        if isinstance(excinfo.value, HarnessError):  # ScenarioError: one line per problem, file:line first
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ScenarioItem(pytest.Function):
    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, self.name
