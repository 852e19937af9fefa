"""Every scenario on the databricks backend, replayed from ``cassettes/databricks/`` with no server and no network.

* Each scenario replays with zero failed checks, and its normalized trace equals the local backend's snapshot
  (``snapshots/<scenario>.json``): the backends agree on every event, state delta, persisted row and Job_B run.
  A declared divergence (``reference_agent.conformance.databricks.DIVERGENCES``; none today) is a strict xfail.
* The Definition-of-Done checks read ``state_delta_json`` from the Databricks ``events`` rows
  (``PersistedSnapshot.source == "rows"``).
* A fresh recording against the fake has the committed cassette's shape, and a recording against a
  "real" workspace (the fake with other names, ids and a token, in live mode) is scrubbed to that shape too
  and replays like the committed one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from harness.checks.base import Status
from harness.databricks_fake import FakeWorkspace
from harness.recording import databricks as fake_cassettes
from harness.recording.persister import read_provenance
from harness.llm.modes import LlmMode
from harness.recording.layout import cassette_dir
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from harness.snapshot.normalize import normalize_trace
from reference_agent.conformance import databricks as target
from reference_agent.backends.databricks.config import DatabricksSettings

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
SNAPSHOTS = ROOT / "snapshots"
# A concurrent case runs only under `crash` (its runners at once): run and record skip it, so it has no cassette.
SCENARIOS = {s.name: s for s in load_scenarios(ROOT / "scenarios") if s.concurrent is None}
REPLAY = RunOptions(backend="databricks", llm_mode=LlmMode.REPLAY, cassette_dir=CASSETTES)
SHAPE_SCENARIO = "multiple_delegations"  # two Job_B runs, SQL, Files and Jobs calls, one turn


def _params() -> list:
    params = []
    for name, scenario in SCENARIOS.items():
        reason = target.declared_divergence(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(scenario, id=name, marks=marks))
    return params


def _failed_checks(result) -> list[str]:
    return [f"{c.name}: {c.explanation} {list(c.evidence[:3])}" for c in result.checks if c.status is Status.FAIL]


def _snapshot(name: str) -> dict:
    override = SNAPSHOTS / "databricks" / f"{name}.json"  # none so far: the backends agree
    return json.loads((override if override.is_file() else SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # every scenario again, on the Databricks backend: tox runs it, tox -e fast does not
@pytest.mark.parametrize("scenario", _params())
def test_scenario_replays_on_databricks(scenario) -> None:
    result = run_scenario(scenario, REPLAY)

    assert result.error is None, result.error
    assert not _failed_checks(result), "\n".join(_failed_checks(result))
    # The DoD checks read what the Databricks tables hold: events rows with their state_delta_json.
    assert result.trace.persisted and {p.source for p in result.trace.persisted} == {"rows"}
    normalized = json.loads(json.dumps(normalize_trace(result.trace)))
    assert normalized == _snapshot(scenario.name), (
        f"{scenario.name}: the databricks backend's normalized trace differs from snapshots/{scenario.name}.json")


def test_the_divergence_table_names_real_scenarios() -> None:
    assert set(target.DIVERGENCES) <= set(SCENARIOS)
    assert all(reason.strip() for reason in target.DIVERGENCES.values())


@pytest.mark.slow
def test_every_scenario_has_a_databricks_cassette_recorded_against_the_fake() -> None:
    folder = cassette_dir(CASSETTES, "reference", "databricks")
    assert folder == CASSETTES / "databricks"
    for name in SCENARIOS:
        path = folder / f"{name}.yaml"
        assert path.is_file(), f"{path} is missing: rlm-conformance record --backend databricks --scenario {name}"
        provenance = read_provenance(path)
        assert provenance is not None and provenance.recorded_against == "databricks-fake", path
        text = path.read_text(encoding="utf-8")
        # The fake's loopback URL must not leak (the escape probe's code names 127.0.0.1 itself, as data).
        assert "://127.0.0.1" not in text and "dapi" not in text and "Bearer" not in text, path


def test_placeholders_match_the_fake() -> None:
    from harness.databricks_fake import DEFAULT_WAREHOUSE

    assert target.PUBLIC_HOST == fake_cassettes.PUBLIC_HOST
    assert target.WAREHOUSE == DEFAULT_WAREHOUSE


# --- cassette shape -------------------------------------------------------------------------------------------------

_IDS = [
    (re.compile(r"fake-stmt-\d+"), "<statement>"),
    (re.compile(r"run_id=\d+"), "run_id=<run>"),
    (re.compile(r"(?<![0-9a-z])[0-9a-f]{12}(?![0-9a-z])"), "<artifact>"),
]


def _shape(path: Path) -> list[str]:
    """Each interaction as METHOD + path?query (ids normalised), and for SQL its statement's first words."""
    shape = []
    for interaction in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
        request = interaction["request"]
        where = request["uri"].split("://", 1)[1].split("/", 1)[1]
        for pattern, placeholder in _IDS:
            where = pattern.sub(placeholder, where)
        line = f"{request['method'].upper()} /{where}"
        if where.startswith("api/2.0/sql/statements") and request["method"].upper() == "POST" and request["body"]:
            body = request["body"]
            statement = json.loads(body if isinstance(body, str) else body.decode()).get("statement", "")
            line += " " + " ".join(statement.split()[:3])
        shape.append(line)
    return shape


@pytest.mark.slow
def test_a_fresh_recording_against_the_fake_has_the_committed_shape(tmp_path: Path) -> None:
    scenario = SCENARIOS[SHAPE_SCENARIO]
    result = run_scenario(scenario, RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, record=True,
                                               cassette_dir=tmp_path))
    assert result.error is None and not _failed_checks(result)

    fresh = tmp_path / "databricks" / f"{SHAPE_SCENARIO}.yaml"
    committed = CASSETTES / "databricks" / f"{SHAPE_SCENARIO}.yaml"
    assert _shape(fresh) == _shape(committed)
    shape = _shape(fresh)
    workspace = [line for line in shape if "generativelanguage" not in line and ":generateContent" not in line]
    assert workspace[0] == "GET /.well-known/databricks-config"  # the SDK's Config() probe, from the cassette
    assert sum(line == "POST /api/2.2/jobs/runs/submit" for line in shape) == 2
    # runs/submit answers once Job_B has ended: one runs/get per run, no waiting to replay.
    assert sum(line.startswith("GET /api/2.2/jobs/runs/get?") for line in shape) == 2
    text = fresh.read_text(encoding="utf-8")
    assert "127.0.0.1" not in text and "dapi" not in text and "<scrubbed>" in text
    assert yaml.safe_load(text)["metadata"]["databricks"]["workspace"] == "fake"


@pytest.mark.slow
def test_a_real_workspace_recording_is_scrubbed_to_the_same_shape_and_replays(tmp_path: Path) -> None:
    """Live mode against the fake dressed as a customer workspace: its names and ids never reach the cassette."""
    scenario = SCENARIOS["single_delegation"]
    token = "dapi" + "fedcba9876543210" * 2
    # A quick workspace: each run has ended by its first poll, so the shape matches the fake's recordings.
    with FakeWorkspace(tmp_path / "ws", token=token, warehouses=("wh0a1b2c3d4e5f6789",),
                       complete_runs_on_submit=True) as fake:
        real = DatabricksSettings(host=fake.host, token=token, warehouse_id="wh0a1b2c3d4e5f6789",
                                  catalog="acme_prod", schema="analytics", volume="scratch", volume_dir="teams/rlm",
                                  cluster_id="0612-123456-abcdefgh", retry_timeout_s=10)
        recorded = run_scenario(scenario, RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, record=True,
                                                     cassette_dir=tmp_path / "cassettes", databricks_live=True,
                                                     databricks=real))
        origin = fake.host
    assert recorded.error is None and not _failed_checks(recorded)

    path = tmp_path / "cassettes" / "databricks" / "single_delegation.yaml"
    text = path.read_text(encoding="utf-8")
    for leaked in (token, origin, "127.0.0.1", "wh0a1b2c3d4e5f6789", "acme_prod", "analytics", "scratch",
                   "teams/rlm", "0612-123456-abcdefgh", "rlm_conformance_"):
        assert leaked not in text, f"{leaked!r} reached the cassette"
    assert read_provenance(path).recorded_against == "databricks-live"
    # The scripted model on a workspace answers Job_B's llm_query through the volume: the runner looks at the
    # delegation's own exchange folder first, to pick up what a crashed try left
    # (tests/databricks/test_databricks_scripted_workspace.py). Otherwise the same.
    exchange = [line for line in _shape(path) if "/sublm/" in line]
    assert exchange == ["GET /api/2.0/fs/directories/Volumes/main/rlm/vol/artifacts/sublm/"
                        "single_delegation-0_iter1_<artifact>"]
    assert yaml.safe_load(text)["metadata"]["databricks"]["sublm_exchange"] is True
    assert [line for line in _shape(path) if "/sublm/" not in line] == _shape(
        CASSETTES / "databricks" / "single_delegation.yaml")

    replayed = run_scenario(scenario, RunOptions(backend="databricks", llm_mode=LlmMode.REPLAY,
                                                 cassette_dir=tmp_path / "cassettes"))
    assert replayed.error is None and not _failed_checks(replayed)
    # The live run's own trace names the real volume folder; its replay is the fake-recorded cassette's run.
    committed = run_scenario(scenario, REPLAY)
    assert normalize_trace(replayed.trace) == normalize_trace(committed.trace)


def test_the_legacy_target_is_refused_on_databricks() -> None:
    result = run_scenario(SCENARIOS["single_delegation"], RunOptions(target="legacy", backend="databricks",
                                                                    cassette_dir=CASSETTES))
    assert result.error is not None and "legacy target runs on the local backend only" in result.error


def test_a_real_workspace_without_settings_is_a_configuration_error(monkeypatch) -> None:
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID", "RLM_DATABRICKS_CATALOG"):
        monkeypatch.delenv(name, raising=False)
    result = run_scenario(SCENARIOS["single_delegation"], RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED,
                                                                    databricks_live=True))
    assert result.error is not None and "DATABRICKS_HOST is not set" in result.error
