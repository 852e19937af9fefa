"""The cloud storage behind the fake's ``EXTERNAL_LINKS`` results: presigned URLs on a loopback server of their own.

A statement run with ``disposition=EXTERNAL_LINKS`` answers with ``external_link`` URLs that point at storage
*outside* the workspace; the Statement Execution API documents that a client must fetch them without the
workspace's ``Authorization`` header (the URL carries its own short-lived credential) and that a link expires
(``expiration``, at most 15 minutes; then a fresh one is asked for with ``.../result/chunks/{n}``). So here:

* each chunk is published under a random signature on a separate ``ThreadingHTTPServer`` (another origin than
  the workspace's);
* a GET that carries an ``Authorization`` header is refused (400, as S3 refuses a presigned URL sent with a
  second credential), as is an unknown signature (403) and a link past its expiration (403);
* ``required_headers`` (e.g. a customer-managed key's decryption header) are handed out in each link's
  ``http_headers`` and a GET without them is refused (403);
* every GET is remembered in ``requests`` (path and the headers' names) for tests.
"""

from __future__ import annotations

import datetime
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

DEFAULT_TTL_S = 900.0  # "a short period, <= 15 minutes"


@dataclass
class _Object:
    body: bytes
    expires: float


class ResultLinks:
    def __init__(self, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.ttl_s = ttl_s
        self.required_headers: dict[str, str] = {}
        self.requests: list[tuple[str, tuple[str, ...]]] = []
        self._objects: dict[str, _Object] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.origin = ""

    def start(self) -> ResultLinks:
        handler = type("LinkHandler", (_Handler,), {"links": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="fake-result-links", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            self._objects.clear()

    def publish(self, key: str, body: bytes) -> dict[str, Any]:
        """Store ``body`` and hand out a fresh presigned link to it: ``external_link``, ``expiration``,
        ``http_headers``."""
        signature = secrets.token_hex(16)
        expires = time.time() + self.ttl_s
        with self._lock:
            self._objects[signature] = _Object(body, expires)
        stamp = datetime.datetime.fromtimestamp(expires, datetime.UTC).isoformat(timespec="milliseconds")
        return {"external_link": f"{self.origin}/results/{key}?X-Fake-Signature={signature}",
                "expiration": stamp.replace("+00:00", "Z"), "http_headers": dict(self.required_headers)}

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        self.requests.append((urlsplit(path).path, tuple(sorted(headers))))
        if "authorization" in headers:
            return 400, (b"<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed; the "
                         b"presigned URL's signature or the Authorization header</Message></Error>")
        signature = (parse_qs(urlsplit(path).query).get("X-Fake-Signature") or [""])[0]
        with self._lock:
            found = self._objects.get(signature)
        if any(headers.get(name.lower()) != value for name, value in self.required_headers.items()):
            return 403, b"<Error><Code>AccessDenied</Code><Message>Missing the link's http_headers</Message></Error>"
        if found is None:
            return 403, b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        if time.time() >= found.expires:
            return 403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
        return 200, found.body

    def expire_all(self) -> None:
        """Every link handed out so far is past its expiration (a slow reader)."""
        with self._lock:
            for found in self._objects.values():
                found.expires = 0.0


class _Handler(BaseHTTPRequestHandler):
    links: ResultLinks
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        status, body = self.links.answer(self.path, {k.lower(): v for k, v in self.headers.items()})
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if status == 200 else "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass
