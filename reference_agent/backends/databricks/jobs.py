"""``DatabricksJobRunner``: Job_B as a one-time run (Jobs API 2.2 ``runs/submit``).

One ``spark_python_task`` runs ``jobb_entry.py`` (uploaded to the volume), which
hands its parameters to the supervisor of the payload wheel ``rlm_jobb``
(``payload.py``: the executor package, built here, uploaded to the volume once
per content and declared as the task's library; ``RLM_DATABRICKS_WHEEL``
overrides it). The runner polls ``runs/get`` with backoff, reads
``runs/get-output`` of the *task* run when something went wrong, and cancels
the run when it outlives its deadline. A request naming its delegation is
idempotent (``idempotency.py``): an earlier attempt's result is adopted, and
the submit carries an ``idempotency_token``, so a retry gets the first run back.

The run's state is read from ``status`` (``state`` PENDING/QUEUED/RUNNING/...
/TERMINATED and ``termination_details`` code/type/message), which Jobs API 2.2
answers beside the deprecated ``state`` (life_cycle_state/result_state);
responses without ``status`` are read from ``state``.

Outcome rules:

* The result JSON exists after the run: a ``JobOutcome`` (``runner_state`` is
  the termination code, e.g. SUCCESS or RUN_EXECUTION_ERROR; the code's own
  status is in the JSON).
* No result JSON: ``DatabricksJobError`` naming how the run ended
  (RUN_EXECUTION_ERROR with the error and trace from get-output, a platform
  error such as INTERNAL_ERROR or LIBRARY_INSTALLATION_ERROR, SKIPPED, CANCELED
  — also when it hit timeout_seconds —, or SUCCESS-but-missing), the
  termination message, and the run page URL.
* Deadline passed (``timeout_s + grace_s + startup_s``): the run is cancelled
  and ``DatabricksTimeoutError`` is raised.

``sub_lm`` is not used: Job_B calls the model itself ("direct mode"). With a
``model``, the task parameters carry ``--lm-direct MODEL`` and
``--max-sublm-tokens`` (what is left of the session's sub-LM token budget), and
Job_B's supervisor answers ``llm_query`` over Gemini's REST API, for the code it
runs in a child without the key: ``GOOGLE_API_KEY`` comes from the compute's
environment (``genai_secret``: the cluster's ``spark_env_vars``) and stays in the
supervisor. See ``jobb_entry.py``, ``executor/supervisor.py`` and
``executor/credential.py``.
"""

from __future__ import annotations

import asyncio
import json
import math
import posixpath
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import DatabricksError
from databricks.sdk.service import compute as compute_api
from databricks.sdk.service import jobs as jobs_api

from ...executor.result import EXECUTOR_TIMEOUT_GRACE_S, result_volume_path
from ..confinement import DEFAULT_CONFINEMENT, ConfinementPolicy
from ..idempotency import adoptable, adopted_state, idempotency_token
from ..jobs import JobOutcome, JobRequest, LmBridge, SubLm
from .errors import DatabricksJobError, DatabricksTimeoutError, translate
from .payload import build_payload_wheel
from .polling import Backoff
from .run_status import RunEnding, describe_failure, ending_of, is_terminal, state_of
from .volume import UcVolumeStore

ENTRY_SOURCE = Path(__file__).with_name("jobb_entry.py")
TASK_KEY = "job_b"
_REQUEST_FILE = re.compile(r"^(\d+)\.request\.json$")
_EXCHANGE_FILE = re.compile(r"^\d+\.(request|answer)\.json$")
# How long a request file may stay unreadable (empty, half written) before it is answered as unreadable: Job_B
# writes a few hundred bytes in one write, so seconds mean it never will be whole.
UNREADABLE_REQUEST_GRACE_S = 5.0
_TAIL = 4_000
DEFAULT_BACKOFF = Backoff(initial_s=1.0, factor=1.5, max_s=15.0)


@dataclass(frozen=True)
class JobCompute:
    """Where Job_B runs: exactly one of an existing cluster, a new cluster spec, or serverless."""

    existing_cluster_id: str | None = None
    new_cluster: dict[str, Any] | None = None
    serverless_environment_version: str | None = None
    wheel: str | None = None  # RLM_DATABRICKS_WHEEL: your own payload wheel instead of the one built here
    genai_secret: str | None = None  # "scope/key" -> GOOGLE_API_KEY on a new cluster
    spark_env_vars: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        serverless = self.serverless_environment_version is not None
        if sum((bool(self.existing_cluster_id), bool(self.new_cluster), serverless)) != 1:
            raise ValueError("JobCompute needs exactly one of existing_cluster_id, new_cluster, "
                             "serverless_environment_version")

    def apply(self, task: jobs_api.SubmitTask, *, payload: str | None = None) -> list[jobs_api.JobEnvironment] | None:
        """Put the compute on ``task``; the ``environments`` list for ``runs/submit`` when serverless.

        ``payload``: the /Volumes path of Job_B's payload wheel, the task's one library (``wheel`` wins).
        """
        wheel = self.wheel or payload
        libraries = [compute_api.Library(whl=wheel)] if wheel else None
        if self.existing_cluster_id:
            task.existing_cluster_id, task.libraries = self.existing_cluster_id, libraries
            return None
        if self.new_cluster:
            spec = dict(self.new_cluster)
            env_vars = {**spec.get("spark_env_vars", {}), **self.spark_env_vars}
            if self.genai_secret:
                env_vars.setdefault("GOOGLE_API_KEY", f"{{{{secrets/{self.genai_secret}}}}}")
            if env_vars:
                spec["spark_env_vars"] = env_vars
            task.new_cluster, task.libraries = compute_api.ClusterSpec.from_dict(spec), libraries
            return None
        task.environment_key = "rlm_job_b"
        environment = compute_api.Environment(environment_version=self.serverless_environment_version,
                                              dependencies=[wheel] if wheel else None)
        return [jobs_api.JobEnvironment(environment_key="rlm_job_b", spec=environment)]


def confinement_parameters(policy: ConfinementPolicy) -> list[str]:
    """The task parameters that tell Job_B's supervisor how its child confines the code: none for the defaults
    (the payload's ``sandbox.DEFAULT_LIMITS``, confinement on, nothing required)."""
    if not policy.enabled:
        return ["--no-confinement"]
    parameters = ["--require-confinement"] if policy.required else []
    limits = policy.limits()
    if limits != DEFAULT_CONFINEMENT.limits():
        parameters += ["--confine-limits", json.dumps(limits, sort_keys=True, separators=(",", ":"))]
    return parameters


class DatabricksJobRunner:
    def __init__(
        self,
        client: WorkspaceClient,
        volume: UcVolumeStore,
        compute: JobCompute,
        *,
        grace_s: float = 5.0,
        startup_s: float = 900.0,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        model: str | None = None,
        sublm_exchange: bool = False,
        confinement: ConfinementPolicy = DEFAULT_CONFINEMENT,
    ) -> None:
        if grace_s <= EXECUTOR_TIMEOUT_GRACE_S:
            raise ValueError(f"grace_s must exceed the executor's own grace of {EXECUTOR_TIMEOUT_GRACE_S} s")
        self.client = client
        self.volume = volume
        self.compute = compute
        self.grace_s = grace_s
        self.startup_s = startup_s
        self.backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self.model = model  # the sub-LM model Job_B calls itself (--lm-direct); None: llm_query is unavailable
        # True: Job_B's llm_query is answered here, by ``sub_lm``, through request/answer files in the volume
        # (--lm-exchange), never by a model Job_B reaches itself. The harness's scripted model on a workspace.
        self.sublm_exchange = sublm_exchange
        # How Job_B's child confines the code: the local executor's policy (RLM_EXECUTOR_*, RLM_REQUIRE_CONFINEMENT),
        # applied by the child on the compute as far as its kernel allows (executor/supervisor.py).
        self.confinement = confinement
        self._uploaded: tuple[str, str | None] | None = None  # (entry path, payload wheel path)

    async def run(self, request: JobRequest, *, sub_lm: SubLm) -> JobOutcome:
        result_path = result_volume_path(request.artifact_path, request.run_id, request.iteration)
        entry, payload = await asyncio.to_thread(self._ensure_uploaded)
        adopted = await asyncio.to_thread(self._adopt_or_clear, request, result_path)
        if adopted is not None:
            return adopted
        exchange = SubLmExchange(self.volume, sublm_folder(request), LmBridge(
            sub_lm, max_calls=request.max_sublm_calls, max_tokens=request.max_sublm_tokens), clock=self._clock) \
            if self.sublm_exchange else None
        if exchange is not None and request.delegation_id:
            # The folder is this delegation's own: a retry rejoins its run (idempotency_token), whose requests
            # answered already are not asked again and whose waiting ones get their answer.
            await asyncio.to_thread(exchange.resume)
        elif exchange is not None:  # an earlier attempt's answers must never pass for this run's
            await asyncio.to_thread(exchange.clear)
        run_id = await asyncio.to_thread(self._submit, request, entry, payload)
        try:
            run = await self._poll(run_id, request, exchange)
        except BaseException:  # deadline, cancellation of this coroutine, API errors: stop the run too
            await asyncio.to_thread(self._cancel_quietly, run_id)
            raise
        return await asyncio.to_thread(self._outcome, run, result_path)

    # --- steps (blocking SDK calls; run in a thread) ------------------------------------

    def _ensure_uploaded(self) -> tuple[str, str | None]:
        """The entry file and (unless ``RLM_DATABRICKS_WHEEL`` names one) the payload wheel, on the volume once."""
        if self._uploaded is None:
            entry = self.volume.path("_rlm", "jobb_entry.py")
            self.volume.write_text(entry, ENTRY_SOURCE.read_text(encoding="utf-8"))
            payload = None
            if not self.compute.wheel:
                wheel = build_payload_wheel()
                payload = wheel.volume_path(self.volume.root)
                if not self.volume.exists(payload):  # content-addressed: one there already has these bytes
                    self.volume.write_bytes(payload, wheel.data)
            self._uploaded = (entry, payload)
        return self._uploaded

    def _adopt_or_clear(self, request: JobRequest, result_path: str) -> JobOutcome | None:
        """This delegation's result from an earlier attempt (adopted: no second run), else clear the path.

        A stale result from an earlier attempt must never pass for this run's. Without a ``delegation_id`` the
        path is cleared unread, as before idempotent delegations.
        """
        if request.delegation_id:
            try:
                earlier: Any = json.loads(self.volume.read_text(result_path))
            except FileNotFoundError:
                return None  # nothing there: nothing to clear
            except ValueError:
                earlier = None  # half written or not JSON: an earlier attempt's leftovers
            if adoptable(earlier, artifact_path=request.artifact_path, delegation_id=request.delegation_id):
                return JobOutcome(result_path, None, adopted_state(earlier),
                                  f"Job_B result of an earlier attempt adopted from {result_path}; "
                                  f"code status {earlier['status']}")
        self.volume.delete(result_path)
        return None

    def _submit(self, request: JobRequest, entry: str, payload: str | None) -> int:
        parameters = [
            "--artifact-path", request.artifact_path,
            "--run-id", request.run_id,
            "--iteration", str(request.iteration),
            "--timeout", repr(float(request.timeout_s)),
            "--output-cap", str(request.output_cap_bytes),
            "--max-sublm-calls", str(request.max_sublm_calls),
        ]
        if request.context_path:
            parameters += ["--context-path", request.context_path]
        if request.namespace_path:  # the REPL namespace snapshot: variables persist across Job_B runs
            parameters += ["--namespace-path", request.namespace_path]
        if self.sublm_exchange:  # exchange mode: this runner answers llm_query through the volume
            parameters += ["--lm-exchange", sublm_folder(request)]
        elif self.model:  # direct mode: Job_B answers llm_query itself (no LM bridge reaches the cluster)
            parameters += ["--lm-direct", self.model]
            if request.max_sublm_tokens is not None:
                parameters += ["--max-sublm-tokens", str(request.max_sublm_tokens)]
        parameters += confinement_parameters(self.confinement)
        task = jobs_api.SubmitTask(
            task_key=TASK_KEY,
            spark_python_task=jobs_api.SparkPythonTask(python_file=entry, parameters=parameters),
            timeout_seconds=self._run_timeout_s(request),
        )
        environments = self.compute.apply(task, payload=payload)
        try:
            waiter = self.client.jobs.submit(
                run_name=f"rlm-job-b-{request.run_id}-iter{request.iteration}",
                tasks=[task],
                environments=environments,
                timeout_seconds=self._run_timeout_s(request),
                # A retry of this delegation (after a crash between submit and result) gets the first run back.
                idempotency_token=idempotency_token(run_id=request.run_id, iteration=request.iteration,
                                                    delegation_id=request.delegation_id),
            )
        except DatabricksError as exc:
            raise translate(exc, "submitting the Job_B run (jobs/runs/submit)",
                            not_found="check RLM_DATABRICKS_CLUSTER_ID and RLM_DATABRICKS_WHEEL") from exc
        return int(waiter.response.run_id)

    def _run_timeout_s(self, request: JobRequest) -> int:
        return math.ceil(request.timeout_s + self.grace_s + self.startup_s)

    def _get_run(self, run_id: int) -> jobs_api.Run:
        try:
            return self.client.jobs.get_run(run_id)
        except DatabricksError as exc:
            raise translate(exc, f"polling Job_B run {run_id} (jobs/runs/get)") from exc

    def _cancel_quietly(self, run_id: int) -> None:
        try:
            self.client.jobs.cancel_run(run_id)
        except DatabricksError:
            pass

    async def _poll(self, run_id: int, request: JobRequest, exchange: SubLmExchange | None = None) -> jobs_api.Run:
        limit = request.timeout_s + self.grace_s + self.startup_s
        deadline = self._clock() + limit
        delays = self.backoff.delays()
        while True:
            run = await asyncio.to_thread(self._get_run, run_id)
            if is_terminal(run):
                return run
            if exchange is not None and await exchange.serve():
                delays = self.backoff.delays()  # Job_B is talking: poll briskly again while it does
                continue
            if exchange is not None and exchange.deferred:  # a request listed before its bytes: read it again soon
                delays = self.backoff.delays()
            if self._clock() >= deadline:  # run() cancels the run on the way out
                state, message = state_of(run)
                raise DatabricksTimeoutError(
                    f"Job_B run {run_id} did not finish within {limit:g} s (timeout {request.timeout_s:g} s + grace "
                    f"{self.grace_s:g} s + compute start-up {self.startup_s:g} s); last state "
                    f"{state}{': ' + message if message else ''}. It was cancelled. "
                    f"If the compute is slow to start, raise RLM_DATABRICKS_JOB_STARTUP_S. Run page: {run.run_page_url}"
                )
            await self._sleep(next(delays))

    def _outcome(self, run: jobs_api.Run, result_path: str) -> JobOutcome:
        ending = ending_of(run)
        if self.volume.exists(result_path):
            return JobOutcome(result_path, run.run_page_url, ending.code,
                              f"Job_B run {run.run_id} {ending.code}; result in {result_path}")
        raise DatabricksJobError(self._failure_message(run, ending, result_path))

    def _failure_message(self, run: jobs_api.Run, ending: RunEnding, result_path: str) -> str:
        lines = [f"Job_B run {run.run_id} {describe_failure(ending, result_path)}."]
        if ending.message:
            lines.append(f"Termination message: {ending.message}")
        output = self._task_output(run)
        if output is not None:
            if output.error:
                lines.append(f"Error: {output.error}")
            if output.error_trace:
                lines.append("Traceback (from runs/get-output):\n" + output.error_trace[-_TAIL:])
            elif output.logs:
                lines.append("Log tail:\n" + output.logs[-_TAIL:])
        lines.append(f"Run page: {run.run_page_url}")
        return "\n".join(lines)

    def _task_output(self, run: jobs_api.Run) -> jobs_api.RunOutput | None:
        # get-output answers for a task run only; a submitted run's own id is the parent.
        task_run_id = next((t.run_id for t in run.tasks or [] if t.task_key == TASK_KEY and t.run_id), None)
        if task_run_id is None:
            return None
        try:
            return self.client.jobs.get_run_output(task_run_id)
        except DatabricksError:
            return None  # the state and run page still explain the failure


def sublm_folder(request: JobRequest) -> str:
    """The run's sub-LM exchange folder: ``<artifact dir>/sublm/<run_id>_iter<n>`` (one per Job_B run), with
    ``_<delegation_id>`` appended for a delegation (its retries share it; no other delegation's is the same)."""
    name = f"{request.run_id}_iter{request.iteration}" + (f"_{request.delegation_id}" if request.delegation_id else "")
    return posixpath.join(posixpath.dirname(request.artifact_path), "sublm", name)


class SubLmExchange:
    """The runner's side of ``--lm-exchange``: answer each ``<n>.request.json`` in the folder once.

    The answers come from an ``LmBridge`` on the runner's ``sub_lm``, so the call cap, the token budget and the
    error texts are the LM bridge's, as on the local backend.
    """

    def __init__(self, volume: UcVolumeStore, folder: str, bridge: LmBridge, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.volume = volume
        self.folder = folder
        self.bridge = bridge
        self.answered: set[int] = set()
        self._clock = clock
        self._unreadable_since: dict[int, float] = {}  # request id -> when it was first read and not JSON
        self.deferred = 0  # requests the last serve() left to read again (not whole yet)

    def resume(self) -> None:
        """Take up the folder as an earlier attempt of the same run left it: requests with an answer are done."""
        names = set(self.volume.list_names(self.folder))
        self.answered.update(int(m.group(1)) for m in map(_REQUEST_FILE.match, names)
                             if m and f"{m.group(1)}.answer.json" in names)

    def clear(self) -> None:
        """Remove what an earlier attempt of the same run left in the folder (the Files API deletes files only)."""
        for name in self.volume.list_names(self.folder):
            if _EXCHANGE_FILE.match(name):
                self.volume.delete(posixpath.join(self.folder, name))

    async def serve(self) -> int:
        """Answer the requests waiting now; how many were answered."""
        names = await asyncio.to_thread(self.volume.list_names, self.folder)
        waiting = sorted(int(m.group(1)) for m in map(_REQUEST_FILE.match, names)
                         if m and int(m.group(1)) not in self.answered)
        answered = self.deferred = 0
        for request_id in waiting:
            path = posixpath.join(self.folder, f"{request_id}.request.json")
            try:
                message = json.loads(await asyncio.to_thread(self.volume.read_text, path))
            except ValueError as exc:
                # The mount has no rename, so Job_B writes its request in place: a listing can show the file
                # before its bytes. Read it again on the next serve; one still unreadable after the grace is.
                now = self._clock()
                if now - self._unreadable_since.setdefault(request_id, now) < UNREADABLE_REQUEST_GRACE_S:
                    self.deferred += 1
                    continue
                message = {"id": request_id, "prompts": None, "unreadable": str(exc)}
            reply = await self.bridge.reply(message)
            reply["id"] = request_id  # the file's number names the request, whatever its body says
            await asyncio.to_thread(self.volume.write_text, posixpath.join(self.folder, f"{request_id}.answer.json"),
                                    json.dumps(reply))
            self.answered.add(request_id)
            answered += 1
        return answered
