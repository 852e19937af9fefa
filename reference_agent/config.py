"""Configuration of the reference agent, read once from the environment.

Every knob has an embedded default so that the agent runs on one machine with
nothing started by hand: a DuckDB file and a volume folder under ``RLM_HOME``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer; unset it or give a whole number") from None


def _env_limit(name: str, default: int | None) -> int | None:
    """A positive whole number, or ``off``/``none``/``0`` for no limit."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.strip().lower() in ("off", "none", "0"):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value <= 0:
        raise ValueError(f"environment variable {name}={raw!r} is not a limit; give a positive whole number, "
                         f"or off for no limit")
    return value


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"environment variable {name}={raw!r} is not a yes/no value; use 1 or 0")


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not a number; unset it or give seconds as a number") from None


@dataclass(frozen=True)
class AgentSettings:
    """Settings shared by the agents, the executor and the storage backends."""

    model: str = "gemini-2.5-flash"
    # Base URL for every Gemini call (agents and Job_B's sub-LM); None = Google's endpoint.
    gemini_base_url: str | None = None
    app_name: str = "reference_agent"  # = the package folder: ADK names an agent folder's App after it
    max_iterations: int = 6
    home: Path = field(default_factory=lambda: Path(".rlm"))
    # Job_B limits.
    executor_timeout_s: float = 30.0
    output_cap_bytes: int = 1_000_000  # per stream, kept in the result JSON
    max_sublm_calls_per_run: int = 64
    # Local Job_B: run a session's blocks in one warm process that keeps the REPL namespace in memory
    # (Linux); off, every block is a one-shot process and the namespace comes from the snapshot alone.
    warm_executor: bool = True
    executor_idle_s: float = 300.0  # a warm process left this long without a block exits
    max_warm_executors: int = 4  # warm processes per host process; the least recently used idle one goes
    # Local Job_B confinement (backends/confinement.py): the kernel keeps the model's code to its folders, the
    # LM bridge and these limits (None: that limit off). Required: refuse to run where a protection is missing.
    executor_confinement: bool = True
    require_confinement: bool = False
    executor_memory_mb: int | None = 4096
    executor_cpu_s: int | None = 600
    executor_file_mb: int | None = 1024
    executor_max_processes: int | None = 128
    # Total tokens Job_B's sub-LM calls may use in one session (as the model reports them).
    max_sublm_tokens_per_session: int = 200_000
    # What goes into session state: previews only, full output stays in the volume.
    preview_chars: int = 2_000
    # The analyst's assembled prompt (instruction, summary, history, snippets), in the model's tokens.
    # Text of at most this many characters is never counted (a token is at least one character).
    context_budget_tokens: int = 32_000
    # Entries kept in user:rlm:history (oldest out when a turn adds one past it).
    history_max_entries: int = 16
    # app:rlm:snippets: at most this many snippets (oldest out), each code at most this many characters.
    max_snippets: int = 20
    snippet_max_chars: int = 4_000

    @property
    def database_path(self) -> Path:
        return self.home / "rlm.duckdb"

    @property
    def volume_root(self) -> Path:
        return self.home / "volume"

    @classmethod
    def from_env(cls) -> "AgentSettings":
        base = cls()
        return replace(
            base,
            model=os.environ.get("RLM_MODEL", base.model),
            gemini_base_url=os.environ.get("GOOGLE_GEMINI_BASE_URL") or None,
            app_name=os.environ.get("RLM_APP_NAME", base.app_name),
            max_iterations=_env_int("RLM_MAX_ITERATIONS", base.max_iterations),
            home=Path(os.environ.get("RLM_HOME", str(base.home))),
            executor_timeout_s=_env_float("RLM_EXECUTOR_TIMEOUT_S", base.executor_timeout_s),
            output_cap_bytes=_env_int("RLM_OUTPUT_CAP_BYTES", base.output_cap_bytes),
            max_sublm_calls_per_run=_env_int("RLM_MAX_SUBLM_CALLS", base.max_sublm_calls_per_run),
            warm_executor=_env_bool("RLM_WARM_EXECUTOR", base.warm_executor),
            executor_idle_s=_env_float("RLM_EXECUTOR_IDLE_S", base.executor_idle_s),
            max_warm_executors=_env_int("RLM_MAX_WARM_EXECUTORS", base.max_warm_executors),
            executor_confinement=_env_bool("RLM_EXECUTOR_CONFINEMENT", base.executor_confinement),
            require_confinement=_env_bool("RLM_REQUIRE_CONFINEMENT", base.require_confinement),
            executor_memory_mb=_env_limit("RLM_EXECUTOR_MEMORY_MB", base.executor_memory_mb),
            executor_cpu_s=_env_limit("RLM_EXECUTOR_CPU_S", base.executor_cpu_s),
            executor_file_mb=_env_limit("RLM_EXECUTOR_FILE_MB", base.executor_file_mb),
            executor_max_processes=_env_limit("RLM_EXECUTOR_MAX_PROCESSES", base.executor_max_processes),
            max_sublm_tokens_per_session=_env_int("RLM_MAX_SUBLM_TOKENS", base.max_sublm_tokens_per_session),
            preview_chars=_env_int("RLM_PREVIEW_CHARS", base.preview_chars),
            context_budget_tokens=_env_int("RLM_CONTEXT_BUDGET_TOKENS", base.context_budget_tokens),
            history_max_entries=_env_int("RLM_HISTORY_MAX_ENTRIES", base.history_max_entries),
        )
