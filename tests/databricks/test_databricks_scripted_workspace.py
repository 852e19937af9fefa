"""The scripted model against a "real" workspace (the fake, in live mode, runs not completed on submit): Job_B's
``llm_query`` comes back to the harness through the volume exchange, never to a model Job_B reaches itself, and
the recording (sub-LM calls included) replays."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.checks.base import Status
from harness.databricks_fake import FakeWorkspace
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from reference_agent.conformance.databricks import DatabricksWorkspace
from reference_agent.backends.databricks.config import DatabricksSettings

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = {s.name: s for s in load_scenarios(ROOT / "scenarios")}["llm_query"]


def test_the_exchange_is_chosen_for_the_scripted_model_on_a_workspace_only() -> None:
    def workspace(kind: str, mode: str) -> DatabricksWorkspace:
        return DatabricksWorkspace(kind, DatabricksSettings(), rewrite=None, llm_mode=mode)  # type: ignore[arg-type]

    assert workspace("live", "scripted").runner_options()["sublm_exchange"] is True
    assert "sublm_exchange" not in workspace("live", "live").runner_options()  # Gemini itself: direct mode
    assert "sublm_exchange" not in workspace("fake", "scripted").runner_options()  # the fake's runs: direct mode
    replay = workspace("replay", "replay")
    assert "sublm_exchange" not in replay.runner_options()
    replay.recorded_exchange = True  # read from the cassette's metadata.databricks.sublm_exchange
    assert replay.runner_options()["sublm_exchange"] is True


@pytest.mark.slow
def test_scripted_sub_lm_calls_go_through_the_volume_and_replay(tmp_path: Path) -> None:
    with FakeWorkspace(tmp_path / "ws") as fake:  # runs go PENDING -> RUNNING -> TERMINATED, as on a workspace
        settings = DatabricksSettings(host=fake.host, token=fake.token, warehouse_id="fakewarehouse0001",
                                      catalog="main", schema="rlm", volume="vol", cluster_id="0101-000000-fakecluster",
                                      retry_timeout_s=10)
        recorded = run_scenario(SCENARIO, RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, record=True,
                                                     cassette_dir=tmp_path / "cassettes", databricks_live=True,
                                                     databricks=settings))
        assert "GOOGLE_API_KEY" not in fake.job_env
        listed = [t for _, t in fake.requests if t.startswith("/api/2.0/fs/directories/")]
    failed = [c.name for c in recorded.checks if c.status is Status.FAIL]
    assert recorded.error is None and not failed, (recorded.error, failed)
    (execution,) = recorded.trace.executions
    assert "sentiment: positive" in execution.stdout_head and execution.sublm_calls == 1
    assert listed and all("/sublm/" in t for t in listed)

    path = tmp_path / "cassettes" / "databricks" / "llm_query.yaml"
    cassette = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert cassette["metadata"]["databricks"]["sublm_exchange"] is True
    uris = [i["request"]["uri"] for i in cassette["interactions"]]
    assert any(re.search(r"/sublm/llm_query-0_iter1_[^/]+/1\.answer\.json\?overwrite=true$", u) for u in uris)
    # The sub-LM call is the harness's, so it is in the cassette, as on the local backend.
    bodies = [str(i["request"]["body"]) for i in cassette["interactions"] if ":generateContent" in i["request"]["uri"]]
    assert any("Classify the sentiment" in b for b in bodies)

    replayed = run_scenario(SCENARIO, RunOptions(backend="databricks", llm_mode=LlmMode.REPLAY,
                                                 cassette_dir=tmp_path / "cassettes"))
    assert replayed.error is None and not [c.name for c in replayed.checks if c.status is Status.FAIL]
