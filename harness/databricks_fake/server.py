"""``FakeWorkspace``: a local Databricks workspace on 127.0.0.1 for the Databricks backend's tests.

It implements exactly what the backend calls, as the REST docs describe it:

* ``GET /.well-known/databricks-config`` (the SDK's host-metadata probe in ``Config()``; public)
* Files API: ``PUT|GET|HEAD|DELETE /api/2.0/fs/files/Volumes/<c>/<s>/<v>/...``,
  ``GET|HEAD /api/2.0/fs/directories/Volumes/...`` (listing)
* Jobs API 2.2: ``POST runs/submit``, ``GET runs/get``, ``GET runs/get-output``, ``POST runs/cancel``
* SQL: ``POST /api/2.0/sql/statements``, ``GET .../{id}``, ``GET .../{id}/result/chunks/{n}``,
  ``POST .../{id}/cancel``; ``EXTERNAL_LINKS`` results on a second loopback server (``links.py``,
  ``fake.links.origin``) that refuses the workspace's ``Authorization`` header, as presigned URLs do
* what ``rlm-conformance doctor --databricks`` reads (``workspace_api.py``, ``unity_catalog.py``): SCIM Me,
  ``GET`` of a warehouse, a cluster, a catalog, schema, volume or table, effective UC permissions, object
  permissions, secret keys — from ``FakeWorkspace.objects`` (``workspace_objects.py``)

Besides the REST APIs, one route of the fake's own: ``POST /fake/job-env`` (same token) sets or (``null``)
unsets variables of Job_B's environment, which is how a run's process sets them on a fake another process owns
(``remote.py``: a crash matrix keeps one fake across the killed run and its recovery).

Every ``/api/`` call needs ``Authorization: Bearer <token>``. Anything else is
a 404 ``ENDPOINT_NOT_FOUND``, so a backend change that starts calling a new
endpoint fails loudly here.

Job_B runs locally with ``/Volumes/...`` mapped to the fake's folder; what it
writes (result JSON, tracebacks, logs) is served back with that folder written
as ``/Volumes``, as real compute's mount would have it. ``complete_runs_on_submit``
(the harness records cassettes with it on) makes ``runs/submit`` answer once the
run has ended, so the first ``runs/get`` already reports ``TERMINATED``.
Use it as a context manager::

    with FakeWorkspace(tmp_path) as fake:
        client = make_workspace_client(DatabricksSettings(host=fake.host, token=fake.token), hermetic=True)
        fake.faults.expired_token = True   # fault switches, see faults.py
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from . import directories
from .faults import Faults
from .files import PREFIX as FILES_PREFIX
from .files import FilesApi, VolumeMap
from .jobs import PREFIX as JOBS_PREFIX
from .jobs import JobsApi
from .remote import JOB_ENV_ROUTE, FakeAddress
from .replies import ApiError, NoReply, Reply, error, ok
from .links import ResultLinks
from .sql import INLINE_BYTE_LIMIT, SqlApi
from .sql import PREFIX as SQL_PREFIX
from .unity_catalog import PREFIX as UC_PREFIX
from .unity_catalog import UnityCatalogApi
from .workspace_api import WorkspaceApi
from .workspace_api import serves as workspace_api_serves
from .workspace_objects import Warehouse, WorkspaceObjects

FAKE_TOKEN = "dapi" + "0123456789abcdef" * 2  # shaped like a PAT so cassette scrubbers recognise it
FAKE_WORKSPACE_ID = "1234567890123456"
DEFAULT_WAREHOUSE = "fakewarehouse0001"


class FakeWorkspace:
    def __init__(
        self,
        root: Path | str | None = None,
        *,
        token: str = FAKE_TOKEN,
        warehouses: tuple[str, ...] = (DEFAULT_WAREHOUSE,),
        chunk_rows: int = 1000,
        complete_runs_on_submit: bool = False,
        inline_byte_limit: int = INLINE_BYTE_LIMIT,
    ) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="fake-workspace-")) if root is None else Path(root)
        self.token = token
        self.warehouses = set(warehouses)
        self.chunk_rows = chunk_rows
        self.inline_byte_limit = inline_byte_limit  # INLINE results over it fail, as over 25 MiB on a workspace
        self.links = ResultLinks()  # where EXTERNAL_LINKS results are fetched from (another origin)
        # True: runs/submit answers once Job_B has ended (the harness records cassettes this way).
        self.complete_runs_on_submit = complete_runs_on_submit
        self.faults = Faults()
        # Identity, warehouses, clusters, UC securables and grants, secret scopes: healthy; see workspace_objects.py.
        self.objects = WorkspaceObjects(warehouses={w: Warehouse() for w in warehouses})
        # Extra environment of every Job_B subprocess (a cluster's spark_env_vars), e.g. GOOGLE_API_KEY.
        self.job_env: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path?query) of every request, in order
        self.volumes = VolumeMap(self.root / "volumes")
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.host = ""
        self.files: FilesApi | None = None
        self.jobs: JobsApi | None = None
        self.sql: SqlApi | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeWorkspace:
        handler = type("Handler", (_Handler,), {"workspace": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.files = FilesApi(self.volumes, self.faults)
        self.jobs = JobsApi(self.volumes, self.faults, self.host, FAKE_WORKSPACE_ID,
                            complete_runs_on_submit=self.complete_runs_on_submit, job_env=self.job_env)
        self.sql = SqlApi(self.faults, self.warehouses, self.chunk_rows, links=self.links.start(),
                          inline_byte_limit=self.inline_byte_limit)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-workspace", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.jobs is not None:
            self.jobs.close()
        if self.sql is not None:
            self.sql.close()
        self.links.stop()
        self.files = self.jobs = self.sql = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> FakeWorkspace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> FakeAddress:
        """How another process reaches this fake (``remote.RemoteFake``)."""
        return FakeAddress(self.host, self.token)

    def set_job_env(self, values: dict[str, str | None]) -> None:
        """Set (or, with None, unset) variables of every later Job_B run's environment."""
        for name, value in values.items():
            if value is None:
                self.job_env.pop(name, None)
            else:
                self.job_env[name] = value

    def local_path(self, volume_path: str) -> Path:
        """The local file behind a ``/Volumes/...`` path."""
        return self.volumes.local(volume_path)

    # --- dispatch ------------------------------------------------------------------------

    def dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Reply:
        self.requests.append((method, target))
        parts = urlsplit(target)
        path, query = parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))
        if method == "GET" and path == "/.well-known/databricks-config":
            return ok({"oidc_endpoint": f"{self.host}/oidc", "workspace_id": FAKE_WORKSPACE_ID})
        if method == "POST" and path == JOB_ENV_ROUTE and headers.get("authorization") == f"Bearer {self.token}":
            values = _json(body)
            if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in values.items()):
                return error(400, "INVALID_PARAMETER_VALUE", "job-env takes {name: string or null}")
            self.set_job_env(values)
            return ok({})
        if not path.startswith("/api/"):
            return error(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")
        if self.faults.expired_token:
            return error(401, "UNAUTHENTICATED", "Invalid access token: the token has expired.")
        if headers.get("authorization") != f"Bearer {self.token}":
            return error(401, "UNAUTHENTICATED", "Credential was not sent or was of an unsupported type for this API.")
        try:
            if path.startswith(FILES_PREFIX + "/"):
                UnityCatalogApi(self.objects).files_guard(method, unquote(path[len(FILES_PREFIX):]))
                return self.files.handle(method, path, query, body)
            if path.startswith(directories.PREFIX + "/"):
                return directories.handle(self.volumes, method, path, query)
            if path.startswith(UC_PREFIX + "/"):
                return UnityCatalogApi(self.objects).handle(method, path, query)
            if workspace_api_serves(method, path):
                return WorkspaceApi(self.objects).handle(method, path, query)
            if path.startswith(JOBS_PREFIX + "/"):
                return self.jobs.handle(method, path, query, _json(body))
            if path == SQL_PREFIX or path.startswith(SQL_PREFIX + "/"):
                return self.sql.handle(method, path, _json(body))
        except ApiError as exc:
            return exc.reply
        return error(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")


def _json(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        data = json.loads(body)
    except ValueError:
        raise ApiError(400, "MALFORMED_REQUEST", "Invalid JSON given in the body of the request") from None
    if not isinstance(data, dict):
        raise ApiError(400, "MALFORMED_REQUEST", "The request body must be a JSON object")
    return data


class _Handler(BaseHTTPRequestHandler):
    workspace: FakeWorkspace
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each small reply waits ~40 ms for a delayed ACK

    def _handle(self) -> None:
        body = self._body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            reply = self.workspace.dispatch(self.command, self.path, headers, body)
        except NoReply:  # the client is gone: no answer, the connection closed
            self.close_connection = True
            return
        except Exception as exc:  # a bug in the fake: answer 500 so the test shows it
            reply = error(500, "INTERNAL_ERROR", f"fake workspace bug: {type(exc).__name__}: {exc}")
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if "Content-Length" not in reply.headers:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.body:
            self.wfile.write(reply.body)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return bytes(data)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: tests read fake.requests
        pass
