"""A local stub of GitHub's REST endpoints for issue comments (http.server in a thread): list (paginated), create
and update, as docs.github.com/rest/issues/comments describes them. The comment script's tests talk only to it."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "stub-token"
LIST = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<issue>\d+)/comments$")
ONE = re.compile(r"^/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)$")


@dataclass
class GitHubStub:
    url: str = ""
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue -> its comments
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, path with query)
    refuse: int | None = None  # answer every request with this status
    next_id: int = 1000

    def add(self, issue: int, body: str) -> dict[str, Any]:
        self.next_id += 1
        comment = {"id": self.next_id, "body": body, "html_url": f"{self.url}/pr/{issue}#c{self.next_id}",
                   "user": {"login": "github-actions[bot]"}}
        self.comments.setdefault(issue, []).append(comment)
        return comment


def _handler(stub: GitHubStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self, method: str) -> None:
            stub.calls.append((method, self.path))
            parts = urlsplit(self.path)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
            if stub.refuse is not None:
                return self._answer(stub.refuse, {"message": "Resource not accessible by integration"})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}" or \
                    self.headers.get("Accept") != "application/vnd.github+json":
                return self._answer(401, {"message": "Bad credentials"})
            if (m := LIST.match(parts.path)) and method == "GET":
                query = parse_qs(parts.query)
                per_page, page = int(query.get("per_page", ["30"])[0]), int(query.get("page", ["1"])[0])
                every = stub.comments.get(int(m["issue"]), [])
                return self._answer(200, every[(page - 1) * per_page:page * per_page])
            if (m := LIST.match(parts.path)) and method == "POST":
                return self._answer(201, stub.add(int(m["issue"]), body["body"]))
            if (m := ONE.match(parts.path)) and method == "PATCH":
                for comment in (c for cs in stub.comments.values() for c in cs):
                    if comment["id"] == int(m["id"]):
                        comment["body"] = body["body"]
                        return self._answer(200, comment)
            return self._answer(404, {"message": "Not Found"})

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

    return Handler


@contextmanager
def github_stub() -> Iterator[GitHubStub]:
    stub = GitHubStub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
