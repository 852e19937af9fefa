"""Settings of the Databricks backend, from the environment and the command line, and the SDK client.

Every setting has one environment variable and (except the token) one flag;
a flag wins over the variable. Nothing is required up front: each part of the
backend asks for what it needs (``require("sql")`` ...), and the error names
every missing variable at once.

==============================  ===================================  ===========================================
setting                         environment variable                 flag
==============================  ===================================  ===========================================
host                            DATABRICKS_HOST                      --databricks-host
token (or profile)              DATABRICKS_TOKEN                     (none: keep secrets off the command line)
profile                         DATABRICKS_CONFIG_PROFILE            --databricks-profile
warehouse_id                    DATABRICKS_WAREHOUSE_ID              --databricks-warehouse-id
catalog / schema / volume       RLM_DATABRICKS_CATALOG / _SCHEMA /   --databricks-catalog / -schema / -volume
                                _VOLUME
volume_dir (folder in volume)   RLM_DATABRICKS_VOLUME_DIR            --databricks-volume-dir
job compute, exactly one of:
  existing cluster              RLM_DATABRICKS_CLUSTER_ID            --databricks-cluster-id
  new cluster (JSON or @file)   RLM_DATABRICKS_NEW_CLUSTER           --databricks-new-cluster
  serverless environment        RLM_DATABRICKS_SERVERLESS=1          --databricks-serverless
serverless environment version  RLM_DATABRICKS_ENVIRONMENT_VERSION   --databricks-environment-version
Job_B payload wheel (override)  RLM_DATABRICKS_WHEEL                 --databricks-wheel
GOOGLE_API_KEY secret           RLM_DATABRICKS_GENAI_SECRET          (scope/key; see jobs.py on llm_query)
SQL timeout (s)                 RLM_DATABRICKS_SQL_TIMEOUT_S         --databricks-sql-timeout
SQL warehouse start-up wait (s) RLM_DATABRICKS_WAREHOUSE_WAIT_S      --databricks-warehouse-wait
job start-up allowance (s)      RLM_DATABRICKS_JOB_STARTUP_S         --databricks-job-startup
==============================  ===================================  ===========================================
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import DatabricksConfigError

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

# databricks-sdk is imported where a client is made, not here: importing it takes ~1.8 s (every service module),
# and the CLI reads this module's flag list on every start, local backend or not.

PARTS = ("workspace", "sql", "volume", "jobs")
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class _Source:
    env: str
    flag: str | None
    help: str
    kind: type = str


# field name -> where it comes from
_S = _Source
_SOURCES: dict[str, _Source] = {
    "host": _S("DATABRICKS_HOST", "--databricks-host", "workspace URL, https://<name>.cloud.databricks.com"),
    "token": _S("DATABRICKS_TOKEN", None, "personal access token"),
    "profile": _S("DATABRICKS_CONFIG_PROFILE", "--databricks-profile", "profile in ~/.databrickscfg (not a token)"),
    "warehouse_id": _S("DATABRICKS_WAREHOUSE_ID", "--databricks-warehouse-id", "SQL warehouse for the tables"),
    "catalog": _S("RLM_DATABRICKS_CATALOG", "--databricks-catalog", "catalog of the tables and the volume"),
    "schema": _S("RLM_DATABRICKS_SCHEMA", "--databricks-schema", "schema of the tables and the volume"),
    "volume": _S("RLM_DATABRICKS_VOLUME", "--databricks-volume", "UC volume for artifacts, context and results"),
    "volume_dir": _S("RLM_DATABRICKS_VOLUME_DIR", "--databricks-volume-dir", "folder inside the volume"),
    "cluster_id": _S("RLM_DATABRICKS_CLUSTER_ID", "--databricks-cluster-id", "existing cluster that runs Job_B"),
    "new_cluster": _S("RLM_DATABRICKS_NEW_CLUSTER", "--databricks-new-cluster",
                      "new_cluster spec for Job_B: JSON, or @path to a JSON file"),
    "serverless": _S("RLM_DATABRICKS_SERVERLESS", "--databricks-serverless", "run Job_B on serverless compute", bool),
    "environment_version": _S("RLM_DATABRICKS_ENVIRONMENT_VERSION", "--databricks-environment-version",
                              "serverless environment version"),
    "wheel": _S("RLM_DATABRICKS_WHEEL", "--databricks-wheel",
                "/Volumes path of your own Job_B payload wheel (rlm_jobb); unset: the job runner builds and uploads "
                "it (see payload.py)"),
    "genai_secret": _S("RLM_DATABRICKS_GENAI_SECRET", None, "secret scope/key holding GOOGLE_API_KEY for Job_B"),
    "sql_timeout_s": _S("RLM_DATABRICKS_SQL_TIMEOUT_S", "--databricks-sql-timeout",
                        "seconds a statement may stay RUNNING", float),
    "warehouse_wait_s": _S("RLM_DATABRICKS_WAREHOUSE_WAIT_S", "--databricks-warehouse-wait",
                           "seconds a statement may wait (PENDING) for the SQL warehouse to start", float),
    "job_startup_s": _S("RLM_DATABRICKS_JOB_STARTUP_S", "--databricks-job-startup",
                        "seconds allowed for Job_B compute to start", float),
}


@dataclass(frozen=True)
class DatabricksSettings:
    host: str | None = None
    token: str | None = field(default=None, repr=False)
    profile: str | None = None
    warehouse_id: str | None = None
    catalog: str | None = None
    schema: str | None = None
    volume: str | None = None
    volume_dir: str = "rlm"
    cluster_id: str | None = None
    new_cluster: dict[str, Any] | None = None
    serverless: bool = False
    environment_version: str = "2"
    wheel: str | None = None  # unset: the job runner uploads the payload it builds (payload.py)
    genai_secret: str | None = None
    sql_timeout_s: float = 300.0
    warehouse_wait_s: float = 600.0  # a stopped classic warehouse takes minutes; serverless, seconds
    job_startup_s: float = 900.0
    # SDK retry budget for transient errors; None: the SDK default (300 s). Hermetic clients use 10 s.
    retry_timeout_s: int | None = None

    # --- building --------------------------------------------------------------

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None,
                 args: argparse.Namespace | None = None) -> DatabricksSettings:
        """Settings from ``env`` (default ``os.environ``), overridden by flags parsed with ``add_cli_arguments``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, source in _SOURCES.items():
            raw: Any = None
            if args is not None and source.flag:
                raw = getattr(args, _dest(source.flag), None)
            if raw is None or raw == "":
                raw = env.get(source.env) or None
                if raw is None and name == "cluster_id":
                    raw = env.get("DATABRICKS_CLUSTER_ID") or None
            if raw is not None:
                values[name] = _parse(name, source, raw)
        return cls(**values)

    def with_overrides(self, **changes: Any) -> DatabricksSettings:
        return replace(self, **changes)

    # --- derived ---------------------------------------------------------------

    @property
    def volume_root(self) -> str:
        """``/Volumes/<catalog>/<schema>/<volume>/<volume_dir>``."""
        self.require("volume")
        tail = f"/{self.volume_dir.strip('/')}" if self.volume_dir.strip("/") else ""
        return f"/Volumes/{self.catalog}/{self.schema}/{self.volume}{tail}"

    @property
    def compute_kind(self) -> str:
        """``existing_cluster``, ``new_cluster`` or ``serverless`` (``require("jobs")`` first)."""
        chosen = self._compute_choices()
        if len(chosen) != 1:
            self.require("jobs")
        return chosen[0]

    def _compute_choices(self) -> list[str]:
        choices = (("existing_cluster", bool(self.cluster_id)), ("new_cluster", bool(self.new_cluster)),
                   ("serverless", self.serverless))
        return [kind for kind, on in choices if on]

    # --- validation --------------------------------------------------------------

    def require(self, *parts: str, hermetic: bool = False) -> None:
        """Raise ``DatabricksConfigError`` naming every variable missing for ``parts`` (see ``PARTS``)."""
        unknown = [p for p in parts if p not in PARTS]
        if unknown:
            raise ValueError(f"unknown part(s) {unknown}; use {PARTS}")
        problems: list[str] = []

        def missing(name: str, why: str) -> None:
            source = _SOURCES[name]
            flag = f"; or pass {source.flag}" if source.flag else ""
            problems.append(f"{source.env} is not set ({why}{flag})")

        # Every part talks to the workspace, so host and credentials are always checked.
        if not self.host:
            missing("host", "the workspace URL, e.g. https://<name>.cloud.databricks.com")
        elif not re.match(r"^https?://", self.host):
            problems.append(f"DATABRICKS_HOST={self.host!r} must start with https://")
        if hermetic and not self.token:
            missing("token", "hermetic clients (replay, the local fake) authenticate with a token only")
        elif not self.token and not self.profile:
            problems.append("neither DATABRICKS_TOKEN nor DATABRICKS_CONFIG_PROFILE is set (a personal access "
                            "token, or a profile in ~/.databrickscfg)")
        if "sql" in parts and not self.warehouse_id:
            missing("warehouse_id", "the SQL warehouse that holds the session and artifact tables")
        if {"sql", "volume", "jobs"} & set(parts):  # the tables and the volume live in catalog.schema
            for name in ("catalog", "schema"):
                if not getattr(self, name):
                    missing(name, f"the Unity Catalog {name} of the tables and the volume")
                elif not _NAME.match(getattr(self, name)):
                    problems.append(f"{_SOURCES[name].env}={getattr(self, name)!r} must be a plain identifier")
        if "volume" in parts or "jobs" in parts:
            if not self.volume:
                missing("volume", "the UC volume for artifacts, context and results")
            elif not _NAME.match(self.volume):
                problems.append(f"RLM_DATABRICKS_VOLUME={self.volume!r} must be a plain identifier")
        if "jobs" in parts:
            chosen = self._compute_choices()
            if not chosen:
                problems.append("no Job_B compute: set exactly one of RLM_DATABRICKS_CLUSTER_ID (an existing cluster), "
                                "RLM_DATABRICKS_NEW_CLUSTER (a new_cluster JSON spec) or RLM_DATABRICKS_SERVERLESS=1")
            elif len(chosen) > 1:
                problems.append(f"more than one Job_B compute is set ({', '.join(chosen)}): keep exactly one of "
                                "RLM_DATABRICKS_CLUSTER_ID, RLM_DATABRICKS_NEW_CLUSTER, RLM_DATABRICKS_SERVERLESS")
        if problems:
            raise DatabricksConfigError("Databricks backend is not configured: " + "; ".join(problems) + ".")


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _parse(name: str, source: _Source, raw: Any) -> Any:
    if source.kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise DatabricksConfigError(f"{source.env}={raw!r} is not a boolean; use 1 or 0")
    if source.kind is float:
        try:
            seconds = float(raw)
        except ValueError:
            raise DatabricksConfigError(f"{source.env}={raw!r} is not a number of seconds") from None
        if not 0 < seconds < float("inf"):
            raise DatabricksConfigError(f"{source.env}={raw!r} must be a positive number of seconds")
        return seconds
    if name == "new_cluster":
        return _parse_cluster_spec(source.env, raw)
    return str(raw).strip()


def _parse_cluster_spec(env: str, raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    text = str(raw).strip()
    where = env
    if text.startswith("@"):
        where = f"{env} file {text[1:]}"
        try:
            text = Path(text[1:]).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise DatabricksConfigError(f"{env}: cannot read {text[1:]}: {exc}") from None
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise DatabricksConfigError(f"{where} is not valid JSON ({exc}); give a Jobs API new_cluster object") from None
    if not isinstance(spec, dict):
        raise DatabricksConfigError(f"{where} must be a JSON object (a Jobs API new_cluster spec)")
    return spec


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--databricks-*`` flags; read them back with ``DatabricksSettings.from_env(args=...)``."""
    group = parser.add_argument_group("Databricks backend (flags override the environment variables)")
    for source in _SOURCES.values():
        if source.flag is None:
            continue
        if source.kind is bool:
            group.add_argument(source.flag, dest=_dest(source.flag), action="store_true", default=None,
                               help=f"{source.help} (env {source.env})")
        else:
            group.add_argument(source.flag, dest=_dest(source.flag), default=None,
                               help=f"{source.help} (env {source.env})")


# --- the SDK client ---------------------------------------------------------------

_NEUTRAL = {str: "", bool: False}


def _env_neutralizers(explicit: Mapping[str, Any]) -> dict[str, Any]:
    """Explicit empty values for every SDK setting the environment would otherwise fill.

    ``Config`` reads ``DATABRICKS_*`` (and ``ARM_*``, ``GOOGLE_CREDENTIALS``)
    for each attribute not passed explicitly; an explicit ``""``/``False``
    keeps the variable out. Numeric tuning knobs (``DATABRICKS_RATE_LIMIT``,
    ``DATABRICKS_DEBUG_TRUNCATE_BYTES``) have no neutral value and still apply;
    they do not change what is requested.
    """
    from databricks.sdk.config import Config

    neutral: dict[str, Any] = {}
    for attr in Config.attributes():
        names = [n for n in (attr.env, *getattr(attr, "env_aliases", ())) if n]
        if attr.name in explicit or not any(os.environ.get(n) for n in names):
            continue
        if attr.transform in _NEUTRAL:
            neutral[attr.name] = _NEUTRAL[attr.transform]
        elif attr.name == "cloud":
            neutral[attr.name] = ""  # parsed to None
    return neutral


def workspace_config_kwargs(settings: DatabricksSettings, *, hermetic: bool) -> dict[str, Any]:
    """The ``Config(...)`` arguments ``make_workspace_client`` uses (exposed for tests and diagnostics)."""
    settings.require("workspace", hermetic=hermetic)
    kwargs: dict[str, Any] = {
        "host": settings.host,
        # Plain Files API (PUT/GET/HEAD /api/2.0/fs/files): our files are small JSON and code; the
        # experimental client's presigned-URL and multipart paths are for large transfers.
        "disable_experimental_files_api_client": True,
    }
    if settings.retry_timeout_s is not None or hermetic:
        kwargs["retry_timeout_seconds"] = settings.retry_timeout_s or 10
    if hermetic:
        # DATABRICKS_CONFIG_FILE=/dev/null semantics: no ~/.databrickscfg, no profile, PAT only.
        kwargs.update(token=settings.token, auth_type="pat", config_file=os.devnull)
        kwargs.update(_env_neutralizers(kwargs))
    elif settings.token:
        kwargs.update(token=settings.token, auth_type="pat")
    else:
        kwargs["profile"] = settings.profile
    return kwargs


def make_workspace_client(settings: DatabricksSettings, *, hermetic: bool) -> WorkspaceClient:
    """A ``WorkspaceClient`` for ``settings``.

    ``hermetic`` (replay, the local fake): host and token only, ``auth_type="pat"``,
    no config file and no ``DATABRICKS_*`` variable. Note that ``Config()``
    itself requests ``GET {host}/.well-known/databricks-config`` (SDK 0.156
    host-metadata discovery; failures only log a warning), so the fake serves it
    and cassettes record it.
    """
    from databricks.sdk import WorkspaceClient
    from databricks.sdk.config import Config

    try:
        config = Config(product="rlm-conformance", product_version=_version(),
                        **workspace_config_kwargs(settings, hermetic=hermetic))
    except ValueError as exc:
        raise DatabricksConfigError(f"Databricks SDK configuration failed: {exc}") from exc
    return WorkspaceClient(config=config)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0.0.0"
