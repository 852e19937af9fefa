"""Response helpers shared by the fake's APIs: JSON bodies and Databricks error bodies."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def ok(payload: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(payload).encode("utf-8"), {"Content-Type": "application/json"})


def error(status: int, code: str, message: str) -> Reply:
    """The REST error body: ``{"error_code": ..., "message": ...}``."""
    return ok({"error_code": code, "message": message}, status)


class ApiError(Exception):
    """Raised inside a handler; becomes ``error(status, code, message)``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.reply = error(status, code, message)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "INVALID_PARAMETER_VALUE", message)


class NoReply(Exception):
    """Raised inside a handler: the client that asked is gone (a crash matrix killed it there), so no answer is
    written and the connection is closed; what the request did on the workspace stands."""
