"""Targets that packages bring (harness/targets/plugins.py): the reference agent registers as any package would,
a plugin's build is taken as any factory, and a broken entry point is named with the fix."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from harness.targets import plugins
from harness.targets.plugins import PluginError, TargetPlugin, service_on_backend
from harness.targets.registry import TargetError, resolve_target


def _solo_agent():
    from google.adk.agents import LlmAgent

    return LlmAgent(name="solo", model="gemini-2.5-flash")


MINE = TargetPlugin(name="mine", build=_solo_agent)  # a zero-argument factory returning a root agent


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch):
    def install(*points: EntryPoint) -> None:
        monkeypatch.setattr(plugins, "entry_points", lambda group: [p for p in points if p.group == group])
        plugins.plugins.cache_clear()

    yield install
    plugins.plugins.cache_clear()


def test_the_reference_agent_is_a_plugin_of_its_own_package() -> None:
    found = plugins.plugins()
    assert {"reference", "legacy"} <= set(found)
    assert found["reference"].build.__module__.startswith("reference_agent.conformance")
    assert "databricks" in plugins.backends() and "delta" in plugins.plugin_session_services()
    assert plugins.known_service_modules() == ("google.adk.", "reference_agent.")


def test_a_plugins_build_is_taken_as_any_factory(installed) -> None:
    installed(EntryPoint("mine", "tests.harness.test_target_plugins:MINE", plugins.GROUP))
    assert plugins.plugin_packages() == ("tests",)
    assert callable(resolve_target("mine"))  # wrapped as a module:attr factory is: a generic target of the agent
    with pytest.raises(TargetError, match="is not a known target. Use one of mine"):
        resolve_target("other")


def test_a_broken_entry_point_is_named_with_the_fix(installed) -> None:
    installed(EntryPoint("broken", "no_such_package.plugin:PLUGIN", plugins.GROUP))
    with pytest.raises(PluginError, match=r"'broken' \(no_such_package.plugin:PLUGIN\) does not load: "
                                          r"ModuleNotFoundError.*Fix the package that declares it"):
        plugins.plugins()
    installed(EntryPoint("wrong", "harness.targets.plugins:GROUP", plugins.GROUP))
    with pytest.raises(PluginError, match="is a str, not a harness.targets.plugins.TargetPlugin"):
        plugins.plugins()


def test_a_service_spelled_with_a_backend_is_that_service_on_that_backend() -> None:
    assert service_on_backend("delta-databricks", "local") == plugins.ServiceOnBackend("delta", "databricks",
                                                                                       "session_service")
    assert service_on_backend("delta", "databricks").named_by == "backend"
    assert service_on_backend("adk-sqlite", "local") == plugins.ServiceOnBackend("adk-sqlite", "local", "backend")
