"""The conformance suite on one-shot Job_B processes: the same traces as on the default warm ones.

``snapshots/`` are taken with a warm process per session (the default). Every scenario that runs Job_B must
replay to the same normalized trace when each block is a one-shot process that gets the REPL namespace from
the snapshot alone (``rlm-conformance run --executor one-shot``), as every Databricks job run does: the warm
process may be faster, never different.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.checks.base import Status
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from harness.snapshot.normalize import normalize_trace

# Left out of `tox -e fast` (end to end through other processes, or a long property run), and of the adk1 env
# (the executor imports no ADK; that line replays the same scenarios on the warm executor): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
ONE_SHOT = RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=ROOT / "cassettes", executor="one-shot")
RUNS_JOB_B = [s for s in load_scenarios(ROOT / "scenarios") if "delegate_code_results" in s.model_dump_json()]


def test_most_scenarios_run_job_b() -> None:
    assert len(RUNS_JOB_B) >= 25  # the selection above must not quietly become empty


@pytest.mark.parametrize("scenario", RUNS_JOB_B, ids=[s.name for s in RUNS_JOB_B])
def test_one_shot_job_b_gives_the_warm_snapshot(scenario) -> None:
    result = run_scenario(scenario, ONE_SHOT)

    assert result.error is None, result.error
    failed = [f"{c.name}: {c.explanation}" for c in result.checks if c.status is Status.FAIL]
    assert not failed, "\n".join(failed)
    modes = {r.metrics.get("executor_process", {}).get("mode") for r in result.trace.executions}
    assert modes == {"one-shot"}, modes
    snapshot = json.loads((ROOT / "snapshots" / f"{scenario.name}.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(normalize_trace(result.trace))) == snapshot, (
        f"{scenario.name}: one-shot Job_B runs give a different trace than snapshots/{scenario.name}.json")
