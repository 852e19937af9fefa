"""SQL results too large for ``INLINE``: fetched through ``EXTERNAL_LINKS``, chunk by chunk, from cloud storage.

The Statement Execution API documents that an ``INLINE`` result is limited to 25 MiB: over it the statement is
aborted (``FAILED``, ``BAD_REQUEST`` "Inline byte limit exceeded ..."), with no result. ``DatabricksSqlEngine``
then runs the statement again with ``disposition=EXTERNAL_LINKS`` (``JSON_ARRAY``), and ``external_rows`` reads
its result: each chunk's ``result.external_links[]`` entry is a presigned URL to the workspace's cloud storage,
fetched with a plain HTTP client and *without* the workspace's ``Authorization`` header (the URL carries its own
short-lived credential; the docs say the workspace credential must be removed), with the link's ``http_headers``
(e.g. a decryption key); the next chunk comes from ``GET .../result/chunks/{n}`` (the SDK's
``get_statement_result_chunk_n``) while a link names a ``next_chunk_index``. A link lives at most 15 minutes: a
download that fails is tried once more with a fresh link for the same chunk. The URL and header values are
credentials, so no message here repeats them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import DatabricksError
from databricks.sdk.service.sql import ExternalLink, ResultData

from reference_agent.backends.databricks.errors import DatabricksSqlError, translate

INLINE_LIMIT_EXCEEDED = "Inline byte limit exceeded"  # the API's message when an INLINE result is over 25 MiB
DOWNLOAD_TIMEOUT_S = 300.0  # one chunk (tens of MiB) from cloud storage


def _no_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """As ``auth``: keeps requests from adding credentials of its own (``~/.netrc``) to a presigned URL."""
    return request


def external_rows(client: WorkspaceClient, statement_id: str, first: ResultData) -> Iterator[list[Any]]:
    """Every row of an ``EXTERNAL_LINKS`` / ``JSON_ARRAY`` result whose first chunk's links are ``first``."""
    links = list(first.external_links or [])
    while links:
        link = links.pop(0)
        yield from _download(client, statement_id, link)
        if not links and link.next_chunk_index is not None:
            links = list(_chunk(client, statement_id, link.next_chunk_index).external_links or [])


def _chunk(client: WorkspaceClient, statement_id: str, index: int) -> ResultData:
    try:
        return client.statement_execution.get_statement_result_chunk_n(statement_id, index)
    except DatabricksError as exc:
        raise translate(exc, f"fetching result chunk {index} of {statement_id}") from exc


def _download(client: WorkspaceClient, statement_id: str, link: ExternalLink) -> list[list[Any]]:
    index = link.chunk_index or 0
    problem = ""
    for attempt in (1, 2):
        if attempt == 2:  # expired (they last <= 15 minutes) or refused: the same chunk with a fresh link
            fresh = [x for x in (_chunk(client, statement_id, index).external_links or []) if x.external_link]
            if not fresh:
                break
            link = fresh[0]
        host = urlsplit(link.external_link or "").hostname or "?"
        try:
            response = requests.get(link.external_link or "", headers=dict(link.http_headers or {}), auth=_no_auth,
                                    timeout=DOWNLOAD_TIMEOUT_S)
        except requests.RequestException as exc:
            problem = f"{type(exc).__name__} from {host}"
            continue
        if response.status_code == 200:
            return _json_rows(response, statement_id, index)
        problem = f"HTTP {response.status_code} from {host}: {response.text.strip()[:200]}"
    raise DatabricksSqlError(
        f"could not download result chunk {index} of SQL statement {statement_id} from its external link "
        f"(cloud storage) after a fresh link was asked for: {problem}. The compute running this needs HTTPS "
        "access to the workspace's storage (EXTERNAL_LINKS results are served from there).")


def _json_rows(response: requests.Response, statement_id: str, index: int) -> list[list[Any]]:
    try:
        rows = response.json()
    except ValueError:
        rows = None
    if not isinstance(rows, list):
        raise DatabricksSqlError(f"result chunk {index} of SQL statement {statement_id} is not a JSON_ARRAY chunk "
                                 f"(a JSON array of rows); got {response.text.strip()[:120]!r}")
    return rows
