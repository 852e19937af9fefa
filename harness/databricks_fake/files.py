"""Files API of the fake: ``/api/2.0/fs/files/Volumes/<catalog>/<schema>/<volume>/...`` on a local folder.

``/Volumes/c/s/v/a/b.json`` is ``<root>/c/s/v/a/b.json``. The same mapping is
what a Job_B subprocess sees in place of the /Volumes mount of real compute.
"""

from __future__ import annotations

import email.utils
import re
from pathlib import Path
from urllib.parse import unquote

from ..files import write_atomic
from .faults import Faults
from .replies import ApiError, Reply, bad_request

PREFIX = "/api/2.0/fs/files"
_NOT_FOUND = "The file being accessed is not found."


class VolumeMap:
    """``/Volumes/...`` paths to files under ``root`` and back."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def local(self, volume_path: str) -> Path:
        parts = [p for p in volume_path.split("/") if p]
        if len(parts) < 5 or parts[0] != "Volumes":
            raise bad_request(f"'{volume_path}' is not a file path under /Volumes/<catalog>/<schema>/<volume>/")
        if any(p in (".", "..") for p in parts):
            raise bad_request(f"'{volume_path}' must not contain '.' or '..' segments")
        return self.root.joinpath(*parts[1:])

    def maybe_local(self, text: str) -> str:
        """``text`` mapped to its local file if it is a /Volumes path, else unchanged."""
        return str(self.local(text)) if text.startswith("/Volumes/") else text

    def as_mounted(self, text: str) -> str:
        """``text`` with this folder's local path written as ``/Volumes``, as a Job_B on real compute sees it."""
        return text.replace(str(self.root), "/Volumes")

    def as_mounted_bytes(self, data: bytes) -> bytes:
        return data.replace(str(self.root).encode(), b"/Volumes")


class FilesApi:
    def __init__(self, volumes: VolumeMap, faults: Faults) -> None:
        self.volumes = volumes
        self.faults = faults

    def handle(self, method: str, path: str, query: dict[str, str], body: bytes) -> Reply:
        volume_path = unquote(path[len(PREFIX):])
        local = self.volumes.local(volume_path)
        hidden = bool(self.faults.files_404 and re.search(self.faults.files_404, volume_path))
        if method == "PUT":
            return self._put(local, query, body)
        if method in ("GET", "HEAD"):
            if hidden or not local.is_file():
                if method == "HEAD":
                    return Reply(404)
                raise ApiError(404, "NOT_FOUND", _NOT_FOUND)
            # What Job_B wrote names the mount (/Volumes/...) as on real compute, not the fake's folder.
            data = self.volumes.as_mounted_bytes(local.read_bytes())
            headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(data)),
                       "Last-Modified": email.utils.formatdate(local.stat().st_mtime, usegmt=True)}
            return Reply(200, b"" if method == "HEAD" else data, headers)
        if method == "DELETE":
            if not local.is_file():
                raise ApiError(404, "NOT_FOUND", _NOT_FOUND)
            local.unlink()
            return Reply(204)
        raise ApiError(405, "INVALID_PARAMETER_VALUE", f"{method} is not supported on {PREFIX}")

    @staticmethod
    def _put(local: Path, query: dict[str, str], body: bytes) -> Reply:
        if local.exists() and query.get("overwrite", "false").lower() != "true":
            raise ApiError(409, "ALREADY_EXISTS", "The file being created already exists.")
        write_atomic(local, body)  # creates missing parents, as the Files API does
        return Reply(204)
