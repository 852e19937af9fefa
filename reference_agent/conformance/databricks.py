"""``--backend databricks``: the workspace a scenario run talks to, and the reference agent on it.

The reference agent runs on ``build_databricks_services``: session and artifact
tables on a SQL warehouse (Statement Execution API), code, context and results
in a Unity Catalog volume (Files API), Job_B as a one-time job run (Jobs API
2.2). Which workspace answers depends on the LLM mode:

=========================  ==========================================================================
mode                       workspace
=========================  ==========================================================================
replay (CI)                none: every workspace call is answered from the scenario's cassette
                           (``cassettes/databricks/<scenario>.yaml``, which also holds the model calls);
                           the client is built against ``PUBLIC_HOST`` and the network guard is up
scripted (record or not)   a ``FakeWorkspace`` on 127.0.0.1, one per scenario, that completes each
                           Job_B run before answering runs/submit (one poll per run, reproducible);
                           in a crash matrix the matrix's process keeps it (``crash_workspace``) and
                           the run's process reaches it at ``RunOptions.shared_workspace``
live, or --databricks-live the real workspace of ``DATABRICKS_HOST`` / ``DATABRICKS_TOKEN`` / ... (see
                           ``reference_agent.backends.databricks.config``), under a fresh volume folder
                           and app name per scenario run
=========================  ==========================================================================

Cassettes have one shape whatever answered: host ``PUBLIC_HOST``, volume root
``/Volumes/main/rlm/vol``, warehouse ``fakewarehouse0001``, cluster
``0101-000000-fakecluster``, workspace id ``1234567890123456``; a real
workspace's values (and its token, and user names) are rewritten before
anything is stored (``harness.recording.databricks.WorkspaceRewrite``).
Replay uses exactly these settings, so a cassette recorded against a real
workspace replays like one recorded against the fake.

Reproducible runs: a replayed SQL read hands back what was stored when the
cassette was recorded, so the ids the agent makes (artifact ids, which are also
in volume paths, ADK's invocation, event and function-call ids) must come out
the same in the replay. ``reproducible_ids`` seeds ``uuid.uuid4`` for callers in
``reference_agent`` and ``google.adk`` (nobody else) while a databricks run
lasts, in every mode, from ``id_seed``: the scenario's name, and on a real
workspace a nonce drawn per run. A live workspace keeps what earlier runs made
(the ``artifacts`` table is keyed by artifact id across apps), so a second live
run of a scenario, or two at once, must make other ids; the nonce is stored in
the cassette's ``metadata.databricks.run_nonce`` and replay seeds with it again.
The fake and cassettes without a nonce use the name alone. Waiting is stubbed
on replay: the SQL engine's and the job runner's sleeps are no-ops.

``DIVERGENCES`` lists the scenarios that cannot pass on this backend yet, with
the reason; the databricks scenario tests mark them ``xfail(strict=True)``.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import random
import secrets as _secrets
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import ConfigError, HarnessError
from harness.targets.base import BuiltTarget, TargetEnvironment

from .profile import reference_profile

if TYPE_CHECKING:
    from vcr import VCR
    from vcr.cassette import Cassette

    from harness.databricks_fake import FakeWorkspace, RemoteFake
    from harness.recording.databricks import WorkspaceRewrite
    from harness.run.options import RunOptions
    from harness.scenario.models import Scenario
    from reference_agent.backends.databricks.config import DatabricksSettings

PUBLIC_HOST = "https://fake-workspace.cloud.databricks.com"  # = harness.recording.databricks.PUBLIC_HOST
CATALOG, SCHEMA, VOLUME = "main", "rlm", "vol"
VOLUME_DIR = ""  # the volume itself: /Volumes/main/rlm/vol, which snapshots show as <volume>, as locally
VOLUME_ROOT = f"/Volumes/{CATALOG}/{SCHEMA}/{VOLUME}"
WAREHOUSE = "fakewarehouse0001"  # = harness.databricks_fake.DEFAULT_WAREHOUSE
CLUSTER = "0101-000000-fakecluster"
APP_NAME = "reference_agent"  # AgentSettings().app_name: a live run's own app name is stored as this
# Job_B on a workspace answers llm_query itself (direct mode: its supervisor calls Gemini's REST API and answers the
# code over a loopback bridge; the code's process never holds the key), so the sub-LM scenarios pass here too; their
# sub-LM calls are not in the cassette (the result JSON holds their answers).
DIVERGENCES: dict[str, str] = {}
"""Scenarios that cannot pass on the databricks backend yet: name -> why (xfail strict in its tests)."""


def declared_divergence(scenario: str) -> str | None:
    return DIVERGENCES.get(scenario)


# --- reproducible ids -----------------------------------------------------------------------------------

_ID_CALLERS = ("reference_agent.", "google.adk.")


NONCE_KEY = "run_nonce"  # metadata.databricks.<this>: the live run's nonce, which replay seeds with again


def id_seed(scenario: str, nonce: str | None = None) -> str:
    """The seed of a scenario run's ids: its name, plus a live run's nonce (None: the fake, or an old cassette)."""
    return f"rlm-conformance:{scenario}" + (f":{nonce}" if nonce else "")


def new_run_nonce() -> str:
    """A live run's nonce: its ids (and so its artifact rows and volume paths) differ from every other run's."""
    return _secrets.token_hex(8)


class IdStream:
    """The ids ``reproducible_ids`` hands out; ``reseed`` starts over from another seed (replay of a live run)."""

    def __init__(self, seed: str) -> None:
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed: str) -> None:
        with self._lock:
            self.seed = seed
            self._rng = random.Random(hashlib.sha256(seed.encode("utf-8")).digest())

    def next(self) -> uuid.UUID:
        with self._lock:
            return uuid.UUID(int=self._rng.getrandbits(128), version=4)


@contextlib.contextmanager
def reproducible_ids(seed: str) -> Iterator[IdStream]:
    """``uuid.uuid4`` seeded by ``seed`` for callers in ``reference_agent`` and ``google.adk`` while it lasts.

    Record and replay then make the same artifact ids (they are in volume paths, so in request URLs) and the
    same invocation/event/function-call ids (they are in the SQL rows replay reads back).
    """
    original = uuid.uuid4
    stream = IdStream(seed)

    def uuid4() -> uuid.UUID:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if not caller.startswith(_ID_CALLERS):
            return original()
        return stream.next()

    uuid.uuid4 = uuid4  # type: ignore[assignment]
    try:
        yield stream
    finally:
        uuid.uuid4 = original  # type: ignore[assignment]


# --- the workspace of one scenario run ---------------------------------------------------------------------


def say_progress(message: str) -> None:
    """A wait on the real workspace, on the console (stderr; above the progress bar, which redirects it)."""
    print(f"databricks: {message}", file=sys.stderr, flush=True)


def _no_sleep(seconds: float) -> None:
    return None


async def _no_sleep_async(seconds: float) -> None:
    return None


@dataclass
class DatabricksWorkspace:
    """How a scenario run reaches its workspace, and how its cassette stores what the workspace said."""

    kind: Literal["replay", "fake", "live"]
    settings: DatabricksSettings
    rewrite: WorkspaceRewrite
    llm_mode: str
    fake: FakeWorkspace | RemoteFake | None = None
    app_name: str | None = None  # live: this run's own app name (fresh rows in shared tables)
    recorded_exchange: bool = False  # replay: the cassette was recorded with the sub-LM exchange
    secrets: tuple[str, ...] = field(default=(), repr=False)
    scenario: str = ""
    # live: drawn per run and stored in the cassette; replay: read back from it (None: the fake, an old cassette)
    run_nonce: str | None = None
    ids: IdStream | None = field(default=None, repr=False)
    planted: list[str] = field(default_factory=list)  # the fake: canary credentials in Job_B's environment

    @property
    def id_seed(self) -> str:
        return id_seed(self.scenario, self.run_nonce)

    @property
    def job_b_runs_here(self) -> bool:
        """The fake runs Job_B on this machine: the escape probe's targets (harness/run/escape_probe.py) can be planted
        and watched. Replay runs no Job_B, and a real workspace's compute is not this machine."""
        return self.kind == "fake"

    @property
    def hermetic(self) -> bool:
        """Replay and the fake: host and token only, no config file, no DATABRICKS_* variable."""
        return self.kind != "live"

    @property
    def recorded_against(self) -> str:
        return "databricks-live" if self.kind == "live" else "databricks-fake"

    def sql_options(self) -> dict[str, Any]:
        from reference_agent.backends.databricks.polling import Backoff

        if self.kind == "replay":
            return {"sleep": _no_sleep}
        if self.kind == "fake":
            return {"backoff": Backoff(initial_s=0.02, factor=1.5, max_s=0.1)}
        return {"on_wait": say_progress}  # a real warehouse may take minutes to start: say so on the console

    def runner_options(self) -> dict[str, Any]:
        """The job runner's options. The scripted model on a real workspace: Job_B's ``llm_query`` goes through
        the volume to the harness's ``sub_lm`` (``sublm_exchange``), never to a model Job_B would reach itself.
        A replay follows the recording: the exchange's Files API calls are in the cassette."""
        from reference_agent.backends.databricks.polling import Backoff

        options: dict[str, Any] = {}
        if self.kind == "replay":
            options["sleep"] = _no_sleep_async
        elif self.kind == "fake":
            options["backoff"] = Backoff(initial_s=0.02, factor=1.5, max_s=0.1)
        if self.sublm_exchange:
            options["sublm_exchange"] = True
        return options

    @property
    def sublm_exchange(self) -> bool:
        """Whether Job_B's sub-LM calls come back to the harness through the volume (scripted on a workspace)."""
        from harness.llm.modes import LlmMode

        if self.kind == "replay":
            return self.recorded_exchange
        return self.kind == "live" and self.llm_mode == LlmMode.SCRIPTED.value

    def give_job_b_the_model(self, base_url: str | None, api_key: str) -> None:
        """The fake: Job_B's supervisor calls the model itself (direct mode) with this key and base URL.

        What a cluster's ``spark_env_vars`` do on a real workspace (``GOOGLE_API_KEY`` from the secret scope
        of ``RLM_DATABRICKS_GENAI_SECRET``). The key lives in the Job_B process's environment only, never in a
        request, so never in a cassette; the supervisor keeps it from the child that runs the analyst's code.
        With the scripted model the key is the canary credential of ``harness/checks/canaries.py`` (the scripted
        endpoint takes any key), so ``executor_env_clean`` sees a leak by its value too. Sub-LM traffic goes
        from the supervisor straight to the model (the scripted endpoint on loopback when scripted) and is not
        recorded: on replay the whole Job_B run, result JSON included, comes from the cassette.
        """
        if self.fake is None:
            return
        from harness.checks.canaries import canary_value
        from harness.llm.modes import BASE_URL_VARIABLE, LlmMode

        if self.llm_mode == LlmMode.SCRIPTED.value:
            api_key = canary_value("GOOGLE_API_KEY")
            self.planted = ["GOOGLE_API_KEY"]
        self.fake.set_job_env({"GOOGLE_API_KEY": api_key, BASE_URL_VARIABLE: base_url or None})

    # --- the cassette ---------------------------------------------------------------------------------

    def configure_vcr(self, recorder: VCR) -> None:
        """Put this workspace's rewrites in front of the LLM cassettes' scrubbers (``recorder`` from ``make_vcr``)."""
        scrub_request, scrub_response = recorder.before_record_request, recorder.before_record_response
        rewrite = self.rewrite
        recorder.before_record_request = lambda request: scrub_request(rewrite.request(request))
        recorder.before_record_response = lambda response: scrub_response(rewrite.response(response))
        caller = recorder.matchers.get("rlm_caller")
        if caller is not None:
            from harness.recording.databricks_playback import workspace_aware_caller

            def rlm_caller(r1: Any, r2: Any) -> None:
                workspace_aware_caller(r1, r2, caller=caller)

            recorder.register_matcher("rlm_caller", rlm_caller)

    def attach(self, cassette: Cassette) -> None:
        """Recording: say in the metadata what replay needs. Replay: index the interactions for fast playback."""
        if cassette.write_protected:
            from harness.recording.databricks_playback import index_playback, recorded_settings

            self.follow(cassette)
            index_playback(cassette)
            self.recorded_exchange = bool(recorded_settings(cassette).get("sublm_exchange"))
        else:
            self.annotate(cassette)

    def annotate(self, cassette: Cassette) -> None:
        """Say in the cassette's metadata which settings replay must use (the placeholders), and a live run's nonce."""
        values = {
            "workspace": self.kind, "llm_mode": self.llm_mode, "host": PUBLIC_HOST, "volume_root": VOLUME_ROOT,
            "warehouse_id": WAREHOUSE, "catalog": CATALOG, "schema": SCHEMA, "app_name": APP_NAME,
            **({"sublm_exchange": True} if self.sublm_exchange else {}),
            "scrubbed": "token, host, workspace/warehouse/cluster ids, catalog/schema/volume names and user names "
                        "are placeholders; replay uses exactly these settings",
        }
        if self.run_nonce:
            values[NONCE_KEY] = self.run_nonce
        block = cassette.get_metadata("databricks", values)
        if block is not values:  # re-recording over an older cassette: this run's settings, not the old ones
            block.clear()
            block.update(values)

    def follow(self, cassette: Cassette) -> None:
        """Replay: make the ids the recorded run made (a live recording's nonce; none: the scenario's name alone)."""
        from vcr.errors import MissingMetadataError

        try:
            block = cassette.get_metadata("databricks", None)
        except MissingMetadataError:
            block = None
        nonce = block.get(NONCE_KEY) if isinstance(block, dict) else None
        if nonce is not None and not (isinstance(nonce, str) and nonce.strip()):
            raise HarnessError(f"cassette {getattr(cassette, '_path', '?')}: metadata.databricks.{NONCE_KEY} must be "
                               f"the recorded run's nonce (a hex string), got {nonce!r}; re-record the scenario")
        self.run_nonce = nonce
        if self.ids is not None:
            self.ids.reseed(self.id_seed)


def replay_settings(host: str = PUBLIC_HOST, token: str | None = None) -> DatabricksSettings:
    """The settings every cassette was recorded with (after rewriting) and every replay uses."""
    from harness.databricks_fake import FAKE_TOKEN
    from reference_agent.backends.databricks.config import DatabricksSettings

    return DatabricksSettings(host=host, token=token or FAKE_TOKEN, warehouse_id=WAREHOUSE, catalog=CATALOG,
                              schema=SCHEMA, volume=VOLUME, volume_dir=VOLUME_DIR, cluster_id=CLUSTER,
                              retry_timeout_s=10)


def workspace_kind(options: RunOptions) -> Literal["replay", "fake", "live"]:
    from harness.llm.modes import LlmMode

    if options.llm_mode is LlmMode.REPLAY:
        return "replay"
    live = options.databricks_live if options.databricks_live is not None else options.llm_mode is LlmMode.LIVE
    return "live" if live else "fake"


def check_target(target_name: str) -> None:
    if target_name == "legacy":
        raise ConfigError("--backend databricks: the legacy target runs on the local backend only (it reproduces "
                          "the seeds' before-state on DuckDB). Use --target reference, or a module:attr target whose "
                          "factory reads env.databricks, or drop --backend.")


def preflight(targets: list[str], options: RunOptions) -> None:
    """What would fail every scenario the same way on this backend, raised once (the CLI exits 2)."""
    for target in dict.fromkeys(targets):
        check_target(target)
    if workspace_kind(options) == "live":
        live_settings(options)


def live_settings(options: RunOptions) -> DatabricksSettings:
    """The real workspace's settings (``options.databricks`` or the environment), checked up front."""
    from reference_agent.backends.databricks.config import DatabricksSettings
    from reference_agent.backends.databricks.errors import DatabricksConfigError

    settings = options.databricks if options.databricks is not None else DatabricksSettings.from_env()
    try:
        settings.require("workspace", "sql", "volume", "jobs")
    except DatabricksConfigError as exc:
        raise ConfigError(f"--backend databricks against a real workspace (--databricks-live, or --llm-mode live): "
                          f"{exc} See docs/databricks.md.") from None
    return settings


@contextlib.contextmanager
def databricks_workspace(scenario: Scenario, options: RunOptions, target_name: str,
                         home: Path) -> Iterator[DatabricksWorkspace]:
    """The workspace of one scenario run (see the module docstring), with reproducible ids while it lasts."""
    from harness.databricks_fake import RemoteFake
    from harness.recording.databricks import WorkspaceRewrite

    check_target(target_name)
    kind = workspace_kind(options)
    with contextlib.ExitStack() as stack:
        if kind == "replay":
            workspace = DatabricksWorkspace(kind, replay_settings(), WorkspaceRewrite(), options.llm_mode.value)
        elif kind == "fake":
            shared = options.shared_workspace  # a crash matrix's: the fake outlives this process
            fake = RemoteFake(shared) if shared is not None else stack.enter_context(fake_workspace(home))
            workspace = DatabricksWorkspace(kind, replay_settings(host=fake.host, token=fake.token),
                                            WorkspaceRewrite.for_origin(fake.host), options.llm_mode.value, fake=fake,
                                            secrets=(fake.token,))
        else:
            workspace = _live_workspace(scenario, options)
            workspace.run_nonce = new_run_nonce()  # ids unique to this run: rows and paths of earlier runs stay
        payload_placeholder(workspace.rewrite)
        workspace.scenario = scenario.name
        workspace.ids = stack.enter_context(reproducible_ids(workspace.id_seed))
        yield workspace


def fake_workspace(home: Path) -> FakeWorkspace:
    """The fake of a scripted run (not started): Job_B runs complete before runs/submit answers."""
    from harness.databricks_fake import FakeWorkspace

    return FakeWorkspace(home / "databricks-fake", complete_runs_on_submit=True)


@contextlib.contextmanager
def crash_workspace(options: RunOptions, folder: Path) -> Iterator[Any]:
    """``Backend.crash_workspace``: one fake the processes of a crash-matrix run share, kept by the matrix's process
    (the killed run's tables, volume files and job runs are there for its recovery). A live workspace is shared as
    it is."""
    from harness.targets.plugins import SharedWorkspace

    if workspace_kind(options) != "fake":
        yield SharedWorkspace(options)
        return
    with fake_workspace(folder) as fake:
        yield SharedWorkspace(replace(options, shared_workspace=fake.address), fake=fake)


def payload_placeholder(rewrite: WorkspaceRewrite) -> None:
    """Job_B's payload folder ``_rlm/wheels/<digest>`` is stored as ``_rlm/wheels/payload``: the digest changes
    with every edit of the executor, which a replay (Job_B's results come from the cassette) does not run."""
    from reference_agent.backends.databricks.payload import WHEELS_DIR, build_payload_wheel

    rewrite.add(f"/{build_payload_wheel().folder}/", "/" + "/".join((*WHEELS_DIR, "payload")) + "/")


def _live_workspace(scenario: Scenario, options: RunOptions) -> DatabricksWorkspace:
    from urllib.parse import urlsplit

    from harness.recording.databricks import WorkspaceRewrite

    settings = live_settings(options)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
    tag = f"{stamp}-{_secrets.token_hex(3)}"
    # Fresh rows and files per run: earlier runs' sessions, app/user state and namespace snapshots stay apart.
    folder = "/".join(p for p in (settings.volume_dir.strip("/"), "rlm-conformance", tag, scenario.name) if p)
    app_name = f"rlm_conformance_{tag.replace('-', '_')}"
    settings = replace(settings, volume_dir=folder)
    base_root = f"/Volumes/{settings.catalog}/{settings.schema}/{settings.volume}"
    host = (settings.host or "").rstrip("/")
    rewrite = WorkspaceRewrite(
        [(host, PUBLIC_HOST), (urlsplit(host).netloc, urlsplit(PUBLIC_HOST).netloc),
         (settings.volume_root, VOLUME_ROOT), (base_root, VOLUME_ROOT),
         (settings.warehouse_id or "", WAREHOUSE), (settings.cluster_id or "", CLUSTER), (app_name, APP_NAME)],
        request_fields={"catalog": CATALOG, "schema": SCHEMA}, learn_workspace_id=True)
    return DatabricksWorkspace("live", settings, rewrite, options.llm_mode.value, app_name=app_name,
                               secrets=tuple(s for s in (settings.token,) if s))


# --- the reference agent on the workspace -----------------------------------------------------------------------


def build_reference_on_databricks(env: TargetEnvironment) -> BuiltTarget:
    """The ``reference`` target with ``build_databricks_services`` on ``env.databricks`` (a DatabricksWorkspace)."""
    from reference_agent.app import build_app
    from reference_agent.backends.databricks import build_databricks_services
    from reference_agent.backends.databricks.errors import DatabricksBackendError
    from reference_agent.sessions.delta_session_service import DeltaSessionService

    from .common import reference_target, run_turn, settings_for

    workspace: DatabricksWorkspace | None = env.databricks
    if workspace is None:
        raise HarnessError("the reference target on --backend databricks needs env.databricks (the harness's "
                           "DatabricksWorkspace); run it through harness.run.runner.run_scenario")
    settings = settings_for(env)
    if workspace.app_name:
        settings = replace(settings, app_name=workspace.app_name)
    try:
        services = build_databricks_services(settings, workspace.settings, sub_lm=env.sub_lm,
                                             hermetic=workspace.hermetic, sql_options=workspace.sql_options(),
                                             runner_options=workspace.runner_options(),
                                             count_tokens=getattr(env, "count_tokens", None))
        if env.context is not None:
            services.put_context(env.context)
    except DatabricksBackendError as exc:
        raise HarnessError(f"the reference agent could not start on the databricks backend: {exc}") from exc
    session_service = (env.session_service_factory(env) if env.session_service_factory
                       else DeltaSessionService(services.engine))
    return reference_target(name="reference", profile=reference_profile(), app=build_app(services, model=env.model),
                            session_service=session_service, run_turn=run_turn, services=services, statuses=False)
