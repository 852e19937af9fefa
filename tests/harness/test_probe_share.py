"""One session-service probe per kind of service and run (harness/run/probe_share.py): the workers of ``run -j N``
share it, and a result whose probe ran elsewhere is judged on that probe's record — failures included."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from harness.checks.service_contract import JUDGED
from harness.cli import EXIT_FAILED, main
from harness.run.probe_share import PendingProbes, share_key, shared_probe
from harness.result import ScenarioResult
from harness.scenario.loader import load_scenario
from harness.trace.model import ContractCaseRecord, ServiceProbeRecord, Trace

ROOT = Path(__file__).resolve().parents[2]
KEY = ("pkg.Service", "delta", "local", "delete", "reject")


def _record(status: str = "pass") -> ServiceProbeRecord:
    return ServiceProbeRecord(service="Service", profile="delta", cases=[
        ContractCaseRecord(case="stale_writer_rejected", status=status,
                           message="lost update: persisted key 'writer_a'" if status == "fail" else ""),
        ContractCaseRecord(case="event_order", status="pass")])


def test_the_first_worker_probes_the_others_read_or_leave_it_pending(tmp_path: Path) -> None:
    calls = 0
    release = asyncio.Event()

    async def probe() -> ServiceProbeRecord:
        nonlocal calls
        calls += 1
        await release.wait()
        return _record()

    async def scene() -> tuple[ServiceProbeRecord, ServiceProbeRecord, ServiceProbeRecord]:
        first = asyncio.create_task(shared_probe(str(tmp_path), KEY, "Service", probe))
        await asyncio.sleep(0)  # the first has claimed the kind and is probing
        meanwhile = await shared_probe(str(tmp_path), KEY, "Service", probe)
        release.set()
        done = await first
        return done, meanwhile, await shared_probe(str(tmp_path), KEY, "Service", probe)

    done, meanwhile, after = asyncio.run(scene())
    assert calls == 1
    assert done == after == _record() and done.pending is None
    assert meanwhile.pending == share_key(KEY) and not meanwhile.cases


def _pending_result(scenario: str, checks: tuple = ()) -> ScenarioResult:
    trace = Trace(scenario=scenario, target="reference", llm_mode="replay", session_service="Service",
                  service_probe=ServiceProbeRecord(service="Service", profile="-", pending=share_key(KEY)))
    from harness.checks.service_contract import judge

    return ScenarioResult(scenario=scenario, description="", target="reference", llm_mode="replay",
                          session_service="Service", checks=checks or tuple(judge(n, trace) for n in JUDGED),
                          trace=trace, duration_s=0.1)


def test_a_pending_result_waits_for_the_record_and_is_judged_on_it(tmp_path: Path) -> None:
    """A broken service probed in another worker fails this scenario's check too, naming the case."""
    scenario = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
    probes = PendingProbes(str(tmp_path))
    pending = _pending_result("single_delegation")
    assert {c.status.value for c in pending.checks} == {"n/a"}
    assert probes.settle(0, pending, scenario) == []  # held: no record yet
    (tmp_path / f"{share_key(KEY)}.json").write_text(_record("fail").model_dump_json(), encoding="utf-8")
    [(index, result)] = probes.settle(1, _pending_result("single_delegation"), scenario)[:1]
    assert index == 0 and result.trace.service_probe.pending is None
    verdicts = {c.name: c for c in result.checks}
    assert verdicts["stale_writer_rejected"].failed and "'writer_a'" in "\n".join(
        verdicts["stale_writer_rejected"].evidence)
    assert verdicts["event_order_preserved"].status.value == "pass"
    assert probes.finish() == []


def test_a_probe_that_never_came_says_why_and_a_skip_stays_a_skip(tmp_path: Path) -> None:
    scenario = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
    scenario = scenario.model_copy(update={"expect": scenario.expect.model_copy(update={
        "checks": scenario.expect.checks.model_copy(update={"skip": {"stale_writer_rejected": "not ours"}})})})
    probes = PendingProbes(str(tmp_path))
    from harness.checks.base import not_applicable

    skipped = not_applicable("stale_writer_rejected", "skipped by the scenario: not ours")
    result = _pending_result("single_delegation", checks=(skipped, *(_pending_result("x").checks[1:])))
    assert probes.settle(0, result, scenario) == []
    [(_, final)] = probes.finish()
    verdicts = {c.name: c for c in final.checks}
    assert verdicts["stale_writer_rejected"] == skipped
    assert "ended before it finished" in verdicts["event_order_preserved"].explanation


@pytest.mark.slow
def test_parallel_workers_share_the_probe_and_every_scenario_fails_on_a_broken_service(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run -j 2`` on a session service that loses updates: the probe runs in one worker, every scenario's
    stale_writer_rejected fails with it."""
    monkeypatch.chdir(ROOT)
    names = ["single_delegation", "app_state_two_users", "final_answer", "user_state_two_sessions"]
    args = ["run", "-j", "2", "--no-progress", "--llm-mode", "scripted", "--session-service",
            "tests.broken_services:lost_update", "--reports-dir", str(tmp_path), "--format", "json",
            "--snapshot-dir", str(tmp_path / "snapshots"), "--snapshot-update"]
    for name in names:
        args += ["--scenario", name]
    assert main(args) == EXIT_FAILED
    report = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    by_scenario = {r["scenario"]: {c["name"]: c for c in r["checks"]} for r in report["results"]}
    assert sorted(by_scenario) == sorted(names)
    for name, checks in by_scenario.items():
        assert checks["stale_writer_rejected"]["status"] == "fail", (name, checks["stale_writer_rejected"])
        assert checks["event_order_preserved"]["status"] == "pass", name
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".claim")]  # the share is the run's own
