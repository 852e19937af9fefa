"""Differential runs: ADK's services differ from delta only as declared; each broken service is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract import (
    BUILTIN_PROFILES,
    ServiceProfile,
    render_differential_markdown,
    run_differential,
)
from harness.contract.compare import compare_runs
from harness.contract.differential import assert_only_declared, main
from harness.contract.normalize import ABSENT, NormalizedEvent, NormalizedRun
from harness.run.runner import RunOptions
from harness.scenario.loader import load_scenario
from harness.targets.session_services import SessionServiceError

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = RunOptions(cassette_dir=ROOT / "cassettes")
BROKEN = {name: f"tests.broken_services:{name}" for name in ("temp_leak", "lost_update", "null_storing")}


def scenarios(*names: str):
    return [load_scenario(ROOT / "scenarios" / f"{name}.yaml") for name in names]


@pytest.fixture(scope="module")
def builtin_report():
    return run_differential(scenarios("final_answer_then_new_turn", "app_state_two_users"),
                            ["delta", "adk-memory", "adk-sqlite"], OPTIONS)


@pytest.fixture(scope="module")
def broken_report():
    return run_differential(scenarios("final_answer_then_new_turn"), ["delta", *BROKEN.values()], OPTIONS)


def test_adk_services_differ_from_delta_only_as_declared(builtin_report):
    assert_only_declared(builtin_report)
    kinds = {(d.scenario, d.service_b, d.kind) for d in builtin_report.declared}
    for service in ("adk-memory", "adk-sqlite"):  # the agent's cleanup event leaves a None behind in ADK's services
        assert ("final_answer_then_new_turn", service, "none_deletes") in kinds
        assert ("probe:none_values", service, "none_deletes") in kinds
    assert ("probe:stale_writers", "adk-memory", "stale_writer_rejected") in kinds
    assert ("probe:stale_writers", "adk-sqlite", "stale_writer_rejected") not in kinds
    markdown = render_differential_markdown(builtin_report)
    assert "**0 undeclared**" in markdown and "adk-memory none_deletes: ADK's contract stores None" in markdown


@pytest.mark.parametrize(("broken", "scenario", "where", "key", "value_a", "value_b"), [
    ("temp_leak", "final_answer_then_new_turn", "appended delta", "temp:rlm:stage", ABSENT, "delegated"),
    ("lost_update", "probe:stale_writers", "final state of p-stale", "writer_a", "A", ABSENT),
    ("null_storing", "final_answer_then_new_turn", "final state of final_answer_then_new_turn-0",
     "rlm:final_answer", ABSENT, None),
])
def test_broken_service_is_an_undeclared_difference(broken_report, broken, scenario, where, key, value_a, value_b):
    found = [d for d in broken_report.undeclared if d.service_b == BROKEN[broken] and d.scenario == scenario
             and d.where == where and d.key == key]
    assert found, f"{broken}: no undeclared difference on {key!r}:\n{render_differential_markdown(broken_report)}"
    first = found[0]
    assert isinstance(first.event_index, int) and (first.value_a, first.value_b) == (value_a, value_b)
    row = f"| {scenario} | delta → {BROKEN[broken]} | {first.event_index} | {where} | {key!r} |"
    assert row in render_differential_markdown(broken_report), f"the report does not show {row}"
    with pytest.raises(AssertionError, match="undeclared differences"):
        assert_only_declared(broken_report)


def _run(service: str, final: dict, events: list[dict] | None = None) -> NormalizedRun:
    evs = [NormalizedEvent(i, "s", "a", delta, delta) for i, delta in enumerate(events or [])]
    return NormalizedRun(scenario="sc", service=service, events=evs, final={"s": final})


def test_none_vs_absent_is_declared_only_for_a_service_that_stores_none():
    delta, adk = BUILTIN_PROFILES["delta"], BUILTIN_PROFILES["adk-memory"]
    strict = ServiceProfile(name="strict", factory=lambda folder: None)
    writes = [{"k": None, "temp:t": None}]
    a, b = _run("delta", {}, writes), _run("other", {"k": None, "temp:t": None}, writes)
    declared = compare_runs(a, b, delta, adk)
    assert [(d.key, d.event_index, d.is_declared) for d in declared] == [("k", 0, True), ("temp:t", 0, False)]
    assert not any(d.is_declared for d in compare_runs(a, b, delta, strict))


def test_unknown_or_bad_services_are_named_before_anything_runs(capsys):
    with pytest.raises(SessionServiceError, match=r"'no_such_pkg:make'.*cannot import module 'no_such_pkg'"):
        run_differential([], ["delta", "no_such_pkg:make"], OPTIONS)
    with pytest.raises(SessionServiceError, match=r"'tests\.broken_services:not_a_service' returned a dict"):
        run_differential([], ["delta", "tests.broken_services:not_a_service"], OPTIONS)
    with pytest.raises(SessionServiceError, match="two or more services"):
        run_differential([], ["delta"], OPTIONS)
    assert main(["--services", "delta,nope", "--scenarios-dir", str(ROOT / "scenarios")]) == 2
    assert "'nope' is unknown" in capsys.readouterr().err


def test_a_profile_object_spec_brings_its_declarations(tmp_path):
    from harness.contract import profile_from_spec
    from harness.targets.session_services import resolve_session_service

    profile = profile_from_spec("tests.broken_services:DECLARED_NULL_STORING")
    assert profile.name == "null-storing-declared" and profile.declared("none_deletes")
    build = resolve_session_service("tests.broken_services:DECLARED_NULL_STORING")
    assert type(build(type("Env", (), {"home": tmp_path})())).__name__ == "NullStoringService"
    report = run_differential([], ["delta", "tests.broken_services:DECLARED_NULL_STORING"], OPTIONS)
    assert_only_declared(report)
    assert {d.kind for d in report.declared} == {"none_deletes"}


def test_the_scenario_runs_of_a_differential_do_not_probe_their_services(monkeypatch):
    """Its report compares what each service persisted and has probes of its own: the runner's contract run on
    each kind of service (~2 s each) would be thrown away."""
    import harness.contract.suite
    import harness.run.service_probe

    def probed():
        raise AssertionError("the runner probed a service during a differential run")

    monkeypatch.setattr(harness.run.service_probe, "_PROBED", {})
    monkeypatch.setattr(harness.contract.suite, "contract_cases", probed)
    report = run_differential(scenarios("app_state_two_users"), ["delta", "adk-memory"], OPTIONS, probes=False)
    assert report.scenarios == ["app_state_two_users"]
