"""The rlm-conformance pytest plugin (entry point ``pytest11: rlm_conformance``).

Scenarios become test items two ways, both ordinary ``pytest.Function`` items running the same
``assert_conforms``:

* ``pytest scenarios/`` (or one YAML file): each scenario file yields ``scenario[<name>]``;
* any test that asks for ``rlm_scenario`` is parametrized over every scenario, ids = scenario names;
  ``tests/test_conformance.py::test_scenario[<name>]`` puts them all in the default ``pytest`` run.

A bare ``pytest`` (no paths) also collects the *configured* scenario folders (``--scenarios-dir``, ini
``rlm_scenarios``, ``scenarios`` in ``[tool.rlm-conformance]``) outside ``testpaths``, unless a collected
test asks for ``rlm_scenario``: that test already runs every scenario once. See docs/pytest-plugin.md.

Each item runs its scenario once through ``harness.run.runner.run_scenario`` (own temporary folder, so
``-n 2`` parallelises), fails with every failed check's explanation and evidence (or the harness error,
e.g. a missing cassette, with the command that records it), and compares the normalized trace with
``snapshots/<scenario>.json`` through syrupy (``--snapshot-update`` writes it). In replay mode the network
guard is up during startup (a module:attr target is imported then), collection, and every scenario item
from setup to teardown; the runner adds its own around each run.

``--rlm-explore N`` also runs ``rlm-conformance explore`` at the end of collection: each finding is a failing
item ``explore::<check>`` (``explore.py``).

``--rlm-crash POINTS`` also runs ``rlm-conformance crash`` on the scenarios it would pick: an item
``crash::<scenario>`` each, failing with the crash checks' evidence (``crash_items.py``).

``--shard i/n`` (``--rlm-shard``) keeps one shard's items after ``-k``/``-m`` deselected theirs: a scenario's items
together, split as ``run --shard`` splits scenarios (harness/scenario/shard.py); other tests by node id.

Hooks stay a few lines and hand off to the ``ConformanceSession`` in ``config.stash[SESSION]``. Options:
see ``options.py`` (``pytest --help``, group ``rlm-conformance``).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .collect import ScenarioFile
from .crash_items import MARK_HELP, crash_items
from .explore import explore_items
from .explore import summary as explore_summary
from .options import add_options
from .session import SCENARIO, SESSION, ConformanceSession, offline
from .verdict import assert_conforms

if TYPE_CHECKING:
    from harness.result import ScenarioResult
    from harness.scenario.models import Scenario

__all__ = ["SESSION", "ConformanceSession", "assert_conforms"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARK_HELP)
    config.stash[SESSION] = ConformanceSession.start(config)
    config.stash[SESSION].add_scenario_args(config)


def pytest_report_header(config: pytest.Config) -> str:
    return config.stash[SESSION].header()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    with offline(session.config.stash[SESSION].options):
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[SESSION].drop_double_runs(config, items)
    items += explore_items(session)
    items += crash_items(session)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")  # after -k, -m: split what would run
def pytest_collection_modifyitems_shard(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[SESSION].keep_shard(config, items)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if (line := explore_summary(config)) is not None:
        terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    if "rlm_scenario" not in getattr(item, "fixturenames", ()):
        return (yield)
    with offline(item.config.stash[SESSION].options):
        return (yield)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    if parent.config.stash[SESSION].is_scenario_file(file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "rlm_scenario" in metafunc.fixturenames:
        metafunc.config.stash[SESSION].parametrize(metafunc)


@pytest.fixture
def rlm_scenario(request: pytest.FixtureRequest) -> Scenario:
    """The item's scenario (a YAML item's own; test functions get it by parametrization instead)."""
    return request.node.stash[SCENARIO]


@pytest.fixture
def rlm_scenario_result(request: pytest.FixtureRequest, rlm_scenario: Scenario) -> ScenarioResult:
    """The scenario run once for this item (cached by node id in the session object)."""
    return request.config.stash[SESSION].result_for(request.node, rlm_scenario)
