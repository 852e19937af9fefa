"""What a target is: an ADK App the harness can build, drive one turn at a time, and read back.

The harness hands a target a ``TargetEnvironment`` (the model for the current
LLM mode, the sub-LM, a private folder, the session service to use) and gets a
``BuiltTarget``. The harness then wires its recorder around it: the App gets
one more plugin and the session service a recording wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

from ..trace.model import ExecutionRecord, TurnOutcome
from .profile import TargetProfile

if TYPE_CHECKING:  # annotations only: the `run -j N` parent resolves targets without importing ADK (~1.3 s)
    from google.adk.apps import App
    from google.adk.artifacts import BaseArtifactService
    from google.adk.memory import BaseMemoryService
    from google.adk.models.base_llm import BaseLlm
    from google.adk.sessions.base_session_service import BaseSessionService

SubLm = Callable[[str], Awaitable[str]]
TokenCounter = Callable[[str], Awaitable[int]]
SessionServiceFactory = Callable[["TargetEnvironment"], "BaseSessionService"]


@dataclass
class TargetEnvironment:
    model: BaseLlm
    model_name: str
    sub_lm: SubLm
    home: Path
    max_iterations: int | None  # None: the target's own loop bound (its LoopAgent's max_iterations)
    context: Any = None
    # None: the target's own default (DeltaSessionService on DuckDB for the reference agent).
    session_service_factory: SessionServiceFactory | None = None
    executor_timeout_s: float = 20.0
    max_sublm_calls_per_run: int | None = None  # None: the target's default
    max_sublm_tokens_per_session: int | None = None
    # The analyst's prompt budget in tokens (None: the target's default), and the model's token counter for this
    # LLM mode (the countTokens endpoint through the mode's client: recorded and replayed like other calls).
    context_budget_tokens: int | None = None
    preview_chars: int | None = None  # None: the target's default
    history_max_entries: int | None = None
    count_tokens: TokenCounter | None = None
    # Where the agent's SQL, volume and Job_B live: "local", or "databricks" with ``databricks`` the
    # harness's DatabricksWorkspace (settings, hermetic or not, sleeps to inject; reference_agent/conformance/databricks.py).
    backend: str = "local"
    databricks: Any = None
    # Local backend: a session's Job_B blocks share one warm process (True) or each is a one-shot process.
    warm_executor: bool = True
    # The profile the run judges the target by (None: the target's own), for targets that read it when built.
    profile: TargetProfile | None = None
    # --require-confinement: a target whose executor confines code must refuse to run where it cannot.
    require_confinement: bool = False


RunTurn = Callable[..., Awaitable[TurnOutcome]]
"""(runner, user_id, session_id, message) -> outcome, the target's own run_conversation; one that also takes
``state_delta=`` (the generic target's) can run turns whose message carries state (harness/run/runner.py)."""

ResumeTurn = Callable[..., Awaitable[TurnOutcome]]
"""(runner, user_id, session_id, invocation_id) -> outcome: ADK resuming an invocation a dead process left unfinished
(``Runner.run_async(invocation_id=...)`` with no new message, on an App whose ``resumability_config`` is resumable);
the ``crash`` recovery ``resume`` sends it (harness/crash/resume.py)."""

ListExecutions = Callable[[str, str, str], list[ExecutionRecord]]
"""(app_name, user_id, session_id) -> Job_B runs, from the target's artifact registry."""

ArtifactStatuses = Callable[[str, str, str], dict[str, str]]
"""(app_name, user_id, session_id) -> {artifact id: status}: read after every event, so it must be cheap."""


@dataclass
class BuiltTarget:
    name: str
    app: App
    session_service: BaseSessionService
    run_turn: RunTurn
    profile: TargetProfile = field(default_factory=TargetProfile)
    list_executions: ListExecutions | None = None
    # How the target resumes an interrupted invocation (None: it cannot; crash's recovery 'resume' is then n/a).
    resume_turn: ResumeTurn | None = None
    # The statuses alone, after every event (None: taken from list_executions, which may read each result).
    artifact_statuses: ArtifactStatuses | None = None
    close: Callable[[], None] = lambda: None
    # What else the Runner gets (None: none; ADK agents that save artifacts need the artifact service).
    artifact_service: BaseArtifactService | None = None
    memory_service: BaseMemoryService | None = None
    # State every new session starts with, before the scenario's own initial_state (e.g. the context).
    initial_state: dict[str, Any] = field(default_factory=dict)
    # The agent's own google-genai clients find the run's model through the environment (harness/llm/gateway.py).
    routes_model_environment: bool = False
    # What the target's executor says about its confinement: {"applied": [...], "missing": [{"protection",
    # "reason"}]} (None: the target says nothing); shown in the report, gated by --require-confinement.
    executor_confinement: dict[str, Any] | None = None
    # Where the run's none_semantics and stale_writes came from (harness/run/service_semantics.py): the runner
    # fills it in, the checks' messages name it.
    semantics_origins: dict[str, str] = field(default_factory=dict)


class TargetFactory(Protocol):
    def __call__(self, env: TargetEnvironment) -> BuiltTarget: ...
