"""How a scenario is run: ``RunOptions`` and the model settings every run shares.

Below both ``harness/run/runner.py`` and ``harness/llm/``, so the model side of a run reads its options
without importing the pipeline (``harness.run.runner`` re-exports every name here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..llm.modes import LlmMode
from ..project_config import DEFAULTS

if TYPE_CHECKING:
    from google.genai import types

    from ..targets.profile import TargetProfile

# RETRY_OPTIONS too, through the module __getattr__ below (a name __all__ cannot list).
__all__ = ["DEFAULT_MODEL", "MODEL_TIMEOUT_S", "RunOptions"]

DEFAULT_MODEL = "gemini-2.5-flash"


@cache
def _retry_options() -> types.HttpRetryOptions:
    # Retries as a production agent would configure them; short delays keep replay fast.
    # jitter=0: google-genai's default jitter (up to 1 s) would make nearly every retry sleep max_delay.
    from google.genai import types

    return types.HttpRetryOptions(attempts=3, initial_delay=0.05, max_delay=0.2, exp_base=2.0, jitter=0.0,
                                  http_status_codes=[429, 500, 503])


def __getattr__(name: str) -> Any:
    # RETRY_OPTIONS is built on first use: google-genai's types take ~0.9 s to import, and the `run -j N` parent,
    # which only hands RunOptions to its workers, never needs them.
    if name == "RETRY_OPTIONS":
        return _retry_options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Client timeout of each agent model request, per LLM mode (None: google-genai's default). The scripted endpoint
# answers in milliseconds, so a short timeout lets the `slow` fault (a delay past it) exercise the timeout path
# without slowing the suite; replay answers from the cassette and replays a recorded timeout as one.
MODEL_TIMEOUT_S: dict[LlmMode, float | None] = {LlmMode.REPLAY: 2.0, LlmMode.SCRIPTED: 2.0, LlmMode.LIVE: None}


@dataclass(frozen=True)
class RunOptions:
    target: str | None = None  # None: the scenario's own target
    llm_mode: LlmMode = LlmMode.REPLAY
    record: bool = False  # write the cassette (scripted or live mode)
    cassette_dir: Path = Path(DEFAULTS["cassettes"])
    model: str = DEFAULT_MODEL
    session_service: str = DEFAULTS["session_service"]
    profile: TargetProfile | None = None
    profile_path: Path | None = None  # where ``profile`` came from: the commands the harness prints name it
    # ``profile`` is the project's default ([tool.rlm-conformance] or an ini option), not --profile: a scenario's
    # own ``profile:`` line wins over it (harness/targets/choice.py).
    profile_is_default: bool = False
    work_dir: Path | None = None  # None: a fresh temporary folder per scenario
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # Where the reference agent's SQL, volume and Job_B live: "local" (DuckDB, a folder, a subprocess) or
    # "databricks" (a workspace; replay from cassettes/databricks/, see reference_agent/conformance/databricks.py).
    backend: str = "local"
    # databricks backend outside replay: a real workspace (True) or the local fake (False); None: real with
    # --llm-mode live, the fake otherwise. The real one's DatabricksSettings (None: from the environment).
    databricks_live: bool | None = None
    databricks: Any = None
    # A workspace another process owns, which the backend's workspace reaches instead of starting its own: the crash
    # matrix keeps one per crash point, so that it outlives the killed run (Backend.crash_workspace; the backend
    # plugin says what this holds, e.g. harness.databricks_fake.FakeAddress).
    shared_workspace: Any = None
    # Local Job_B: "warm" (one process per session, the namespace in memory) or "one-shot" (a process per
    # block, the namespace from the snapshot alone, as every Databricks job run is).
    executor: str = "warm"
    # Replay even when a model call's request differs from its recording (harness/recording/drift.py); by default
    # that is a stale cassette and the scenario is not judged.
    allow_drift: bool = False
    # record: save a run whose model traffic does not follow the script (a deliberately broken target such as
    # legacy, whose misfit is the point); by default such a recording is refused (harness/run/script_fit.py).
    allow_script_misfit: bool = False
    # The target's executor must confine the code it runs (kernel limits on files, network, memory, processes):
    # a target that says a protection is missing fails executor_confined instead of warning.
    require_confinement: bool = False
    # Run the session-service contract on the run's service after the scenario (harness/run/service_probe.py), for
    # stale_writer_rejected and the other contract checks. The differential mode compares what the services
    # persisted and runs probes of its own, so it turns this off (~2 s per kind of service).
    probe_session_service: bool = True
    # A folder the workers of one ``run -j N`` share (harness/run/probe_share.py): the first worker to meet a kind of
    # service probes it and leaves the record there; the others leave the probe pending and the parent fills it
    # in, so the ~1-2 s contract suite runs once per kind of service and run, not once per worker.
    probe_share: str | None = None
    # Keep each session as ADK's service returns it at the end (Trace.adk_sessions), for what turns a run back
    # into ADK's formats (``export evalset``) or compares it with ADK's own recording (``import adk-conformance``).
    keep_adk_sessions: bool = False
    # The target reads the scenario's clock (harness/run/clock.py) in replay and scripted runs and in recordings;
    # False: the machine's (a cassette whose prompts hold the time then goes stale: tests/harness/test_clock.py).
    frozen_clock: bool = True
    # Told of each append the target's session service is asked for (before and after), of each scripted model
    # step served, and of the store before the turns (harness/crash/journal.py, a crash run's probe); None: nobody.
    observer: Any = field(default=None, repr=False, compare=False)
    # Sends the scenario's turns instead of the runner's one-after-another drive, with the same arguments
    # (scenario, built target, recording service, ADK Runner, app name, trace, turn counter): a concurrent case's
    # runners at once (harness/crash/concurrent.py); None: the sessions one after another.
    driver: Any = field(default=None, repr=False, compare=False)
