"""The runtime services the agents share: volume, job runner, artifact registry, sub-LM.

One object is built per process (by ``build_local_services`` for the embedded
defaults) and handed to the tool, ``job_builder`` and the plugins, so that a
different backend (Databricks) is a different ``RuntimeServices``, not a
different agent.

Not named ``services.py``: ADK's CLI (``adk run``/``adk web``) imports an agent folder's ``services.py`` as its
own hook for registering session/memory/artifact services (``google.adk.cli.service_registry``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends.confinement import MIB, ConfinementPolicy
from .backends.jobs import JobRunner, LocalJobRunner, SubLm
from .backends.tokens import TokenCounter
from .backends.volume import LocalVolumeStore, VolumeStore
from .config import AgentSettings
from .registry import ArtifactRegistry
from .storage.duckdb_engine import DuckDBEngine
from .storage.sql import SqlEngine


@dataclass
class RuntimeServices:
    settings: AgentSettings
    engine: SqlEngine
    volume: VolumeStore
    runner: JobRunner
    registry: ArtifactRegistry
    # Answers Job_B's llm_query calls; runs in this process so every model call is recordable.
    sub_lm: SubLm
    # Volume path of the scenario/task data given to executed code as `context`.
    context_path: str | None = None
    # Counts tokens of the analyst's assembled prompt with the model's tokenizer; None: no counting, so the
    # prompt is cut by the character bound alone (a text of n characters has at most n tokens).
    count_tokens: TokenCounter | None = None

    def put_context(self, data: Any) -> None:
        """Store ``data`` as the task's JSON in the volume; executed code gets it as ``context``."""
        self.context_path = self.volume.path("context", "context.json")
        self.volume.write_text(self.context_path, json.dumps(data))

    def close(self) -> None:
        """Stop what the services hold open: warm Job_B processes, then the database."""
        close_runner = getattr(self.runner, "close", None)
        if callable(close_runner):
            close_runner()
        self.engine.close()


def confinement_policy(settings: AgentSettings) -> ConfinementPolicy:
    """The local Job_B's confinement from the settings (RLM_EXECUTOR_* and RLM_REQUIRE_CONFINEMENT)."""
    def mib(value: int | None) -> int | None:
        return value * MIB if value else None

    return ConfinementPolicy(enabled=settings.executor_confinement, required=settings.require_confinement,
                             memory_bytes=mib(settings.executor_memory_mb), cpu_seconds=settings.executor_cpu_s,
                             file_bytes=mib(settings.executor_file_mb), processes=settings.executor_max_processes)


def build_local_services(
    settings: AgentSettings,
    *,
    sub_lm: SubLm,
    engine: SqlEngine | None = None,
    volume_root: Path | None = None,
    count_tokens: TokenCounter | None = None,
) -> RuntimeServices:
    """Embedded defaults: DuckDB file and a local folder as the volume, Job_B as a subprocess."""
    engine = engine or DuckDBEngine(settings.database_path)
    volume = LocalVolumeStore(volume_root or settings.volume_root)
    return RuntimeServices(
        settings=settings,
        engine=engine,
        volume=volume,
        runner=LocalJobRunner(volume, warm=settings.warm_executor, idle_s=settings.executor_idle_s,
                              max_warm=settings.max_warm_executors, confinement=confinement_policy(settings)),
        registry=ArtifactRegistry(engine),
        sub_lm=sub_lm,
        count_tokens=count_tokens,
    )
