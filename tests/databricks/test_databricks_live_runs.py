"""Live runs repeat: a scenario run twice against the same "real" workspace makes other ids the second time.

A real workspace keeps what earlier runs wrote: the ``artifacts`` table is keyed by artifact id across apps, so ids
seeded by the scenario's name alone collide on the second live run ("artifact ... is already registered"). Live
runs mix a per-run nonce into the seed, store it in the cassette (``metadata.databricks.run_nonce``), and replay
seeds with it again; the fake and cassettes without a nonce keep the old seed. The "real" workspace here is the
fake dressed as a customer workspace (other names, ids and token) with ``databricks_live=True``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from harness.checks.base import Status
from harness.databricks_fake import FakeWorkspace
from harness.errors import HarnessError
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from harness.targets import databricks as target
from reference_agent.backends.databricks.config import DatabricksSettings

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = next(s for s in load_scenarios(ROOT / "scenarios") if s.name == "single_delegation")
TOKEN = "dapi" + "a1b2c3d4e5f60718" * 2
WAREHOUSE = "wh0a1b2c3d4e5f6789"


def _failed(result) -> list[str]:
    return [f"{c.name}: {c.explanation}" for c in result.checks if c.status is Status.FAIL]


def _live(fake: FakeWorkspace, cassettes: Path) -> RunOptions:
    real = DatabricksSettings(host=fake.host, token=TOKEN, warehouse_id=WAREHOUSE, catalog="acme", schema="analytics",
                              volume="scratch", volume_dir="teams/rlm", cluster_id="0612-123456-abcdefgh",
                              retry_timeout_s=10)
    return RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, record=True, cassette_dir=cassettes,
                      databricks_live=True, databricks=real)


def _artifacts(fake: FakeWorkspace) -> list[tuple[str, str, str]]:
    return fake.sql.conn.execute("SELECT artifact_id, app_name, code_path FROM artifacts ORDER BY created_at").fetchall()


@pytest.mark.slow
def test_a_live_scenario_runs_twice_on_one_workspace_and_each_recording_replays(tmp_path: Path) -> None:
    with FakeWorkspace(tmp_path / "ws", token=TOKEN, warehouses=(WAREHOUSE,), complete_runs_on_submit=True) as fake:
        first = run_scenario(SCENARIO, _live(fake, tmp_path / "first"))
        assert first.error is None and not _failed(first), first.error or _failed(first)
        after_first = _artifacts(fake)
        second = run_scenario(SCENARIO, _live(fake, tmp_path / "second"))
        assert second.error is None and not _failed(second), second.error or _failed(second)
        rows = _artifacts(fake)

    assert after_first and len(rows) == 2 * len(after_first)  # the second run added its own rows beside the first's
    ids = [artifact_id for artifact_id, _, _ in rows]
    assert len(set(ids)) == len(ids), f"artifact ids repeated across live runs: {ids}"
    assert len({code_path for _, _, code_path in rows}) == len(rows)  # so are the volume paths
    nonces = []
    for name in ("first", "second"):
        path = tmp_path / name / "databricks" / f"{SCENARIO.name}.yaml"
        block = yaml.safe_load(path.read_text(encoding="utf-8"))["metadata"]["databricks"]
        assert block["workspace"] == "live"
        nonces.append(block[target.NONCE_KEY])
        replayed = run_scenario(SCENARIO, RunOptions(backend="databricks", llm_mode=LlmMode.REPLAY,
                                                     cassette_dir=tmp_path / name))
        assert replayed.error is None and not _failed(replayed), replayed.error or _failed(replayed)
    assert nonces[0] != nonces[1]


def test_the_seed_without_a_nonce_is_the_one_every_committed_cassette_was_recorded_with() -> None:
    assert target.id_seed("s") == "rlm-conformance:s"
    assert target.id_seed("s", "00ff") == "rlm-conformance:s:00ff"


def _ids(seed: str, count: int = 3) -> list[uuid.UUID]:
    with target.reproducible_ids(seed) as stream:
        return [stream.next() for _ in range(count)]


def test_ids_repeat_per_seed_and_a_reseed_starts_over() -> None:
    assert _ids("a") == _ids("a") != _ids("b")
    with target.reproducible_ids("b") as stream:
        stream.next()
        stream.reseed("a")
        assert [stream.next() for _ in range(3)] == _ids("a")


class _Cassette:
    write_protected = True
    record_mode = "none"

    def __init__(self, metadata: dict) -> None:
        self._metadata, self._path = metadata, "c.yaml"

    def get_metadata(self, key, default):
        from vcr.errors import MissingMetadataError

        if key not in self._metadata:
            raise MissingMetadataError(cassette=self, key=key)
        return self._metadata[key]


def _replaying(metadata: dict) -> target.DatabricksWorkspace:
    from harness.databricks_fake.cassettes import WorkspaceRewrite

    workspace = target.DatabricksWorkspace("replay", target.replay_settings(), WorkspaceRewrite(), "replay",
                                           scenario="s")
    with target.reproducible_ids(workspace.id_seed) as stream:
        workspace.ids = stream
        workspace.follow(_Cassette(metadata))
        workspace.ids = None
        return workspace, stream.seed


def test_replay_seeds_with_the_recorded_nonce_and_without_one_as_before() -> None:
    assert _replaying({"databricks": {target.NONCE_KEY: "beef"}})[1] == "rlm-conformance:s:beef"
    assert _replaying({"databricks": {"workspace": "fake"}})[1] == "rlm-conformance:s"
    assert _replaying({})[1] == "rlm-conformance:s"


def test_a_damaged_nonce_names_the_field_and_the_fix() -> None:
    with pytest.raises(HarnessError, match=r"metadata\.databricks\.run_nonce .* re-record"):
        _replaying({"databricks": {target.NONCE_KEY: ["not", "a", "nonce"]}})
