"""Fixtures: a fake workspace on loopback and the Databricks backend's pieces on it, through the real SDK client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
from reference_agent.backends.databricks.config import (
    DatabricksSettings,
    make_workspace_client,
)
from reference_agent.backends.databricks.jobs import DatabricksJobRunner, JobCompute
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.backends.databricks.volume import UcVolumeStore
from reference_agent.storage.databricks_engine import DatabricksSqlEngine

FAST = Backoff(initial_s=0.02, factor=1.5, max_s=0.1)
VOLUME_ROOT = "/Volumes/main/rlm/vol/rlm"


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeWorkspace]:
    # Three rows per chunk: every multi-row SELECT in these tests also exercises chunk fetching.
    with FakeWorkspace(tmp_path / "workspace", chunk_rows=3) as workspace:
        yield workspace


@pytest.fixture
def settings(fake: FakeWorkspace) -> DatabricksSettings:
    return DatabricksSettings(host=fake.host, token=fake.token, warehouse_id=DEFAULT_WAREHOUSE, catalog="main",
                              schema="rlm", volume="vol", cluster_id="0101-000000-fakecluster")


@pytest.fixture
def client(settings: DatabricksSettings):
    return make_workspace_client(settings, hermetic=True)


class Sleeps:
    """A recording sleep: real but short waits, so the fake's state can move on."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        import time

        self.calls.append(seconds)
        time.sleep(min(seconds, 0.01))


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def engine(client, settings: DatabricksSettings, sleeps: Sleeps) -> DatabricksSqlEngine:
    return DatabricksSqlEngine(client, settings.warehouse_id, catalog=settings.catalog, schema=settings.schema,
                               timeout_s=5.0, backoff=FAST, sleep=sleeps)


@pytest.fixture
def volume(client) -> UcVolumeStore:
    return UcVolumeStore(client, VOLUME_ROOT)


@pytest.fixture
def runner(client, volume: UcVolumeStore) -> DatabricksJobRunner:
    return DatabricksJobRunner(client, volume, JobCompute(existing_cluster_id="0101-000000-fakecluster"),
                               grace_s=2.0, startup_s=10.0, backoff=FAST)
