"""``build_databricks_services``: the ``RuntimeServices`` of the reference agent on a workspace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from databricks.sdk import WorkspaceClient

from ...config import AgentSettings
from ...registry import ArtifactRegistry
from ...wiring import RuntimeServices, TokenCounter, confinement_policy
from ...storage.databricks_engine import DatabricksSqlEngine
from ..jobs import SubLm
from .config import DatabricksSettings, make_workspace_client
from .jobs import DatabricksJobRunner, JobCompute
from .volume import UcVolumeStore


def job_compute(settings: DatabricksSettings) -> JobCompute:
    kind = settings.compute_kind
    return JobCompute(
        existing_cluster_id=settings.cluster_id if kind == "existing_cluster" else None,
        new_cluster=settings.new_cluster if kind == "new_cluster" else None,
        serverless_environment_version=settings.environment_version if kind == "serverless" else None,
        wheel=settings.wheel,
        genai_secret=settings.genai_secret,
    )


def build_databricks_services(
    settings: AgentSettings,
    databricks: DatabricksSettings,
    *,
    sub_lm: SubLm,
    client: WorkspaceClient | None = None,
    hermetic: bool = False,
    sql_options: dict[str, Any] | None = None,
    runner_options: dict[str, Any] | None = None,
    make_client: Callable[..., WorkspaceClient] = make_workspace_client,
    count_tokens: TokenCounter | None = None,
) -> RuntimeServices:
    """SQL warehouse tables, the UC volume and Job_B as a one-time run, from ``databricks`` settings.

    Raises ``DatabricksConfigError`` naming every missing variable before any request is made.
    ``sql_options`` / ``runner_options`` go to the engine / runner (e.g. an injected ``sleep``);
    ``count_tokens`` counts the analyst's prompt tokens (the model's countTokens; None: no counting).
    """
    databricks.require("workspace", "sql", "volume", "jobs", hermetic=hermetic)
    client = client or make_client(databricks, hermetic=hermetic)
    engine = DatabricksSqlEngine(client, databricks.warehouse_id or "", catalog=databricks.catalog,
                                 schema=databricks.schema, timeout_s=databricks.sql_timeout_s,
                                 warehouse_wait_s=databricks.warehouse_wait_s, **(sql_options or {}))
    volume = UcVolumeStore(client, databricks.volume_root)
    runner = DatabricksJobRunner(client, volume, job_compute(databricks), startup_s=databricks.job_startup_s,
                                 **{"model": settings.model, "confinement": confinement_policy(settings),
                                    **(runner_options or {})})
    return RuntimeServices(settings=settings, engine=engine, volume=volume, runner=runner,
                           registry=ArtifactRegistry(engine), sub_lm=sub_lm, count_tokens=count_tokens)
