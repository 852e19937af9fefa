"""``UcVolumeStore``: the ``VolumeStore`` on a Unity Catalog volume, through the Files API.

Paths are the same volume path strings as locally, rooted at
``/Volumes/<catalog>/<schema>/<volume>/...``. On Databricks compute the volume
is also mounted at that path, which is how Job_B reads its artifact and writes
its result; this process only ever goes through the Files API
(``PUT``/``GET``/``HEAD``/``DELETE /api/2.0/fs/files/Volumes/...``).
"""

from __future__ import annotations

import io
import posixpath
from pathlib import Path

from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import DatabricksError, NotFound

from .errors import translate

_HINT = "check RLM_DATABRICKS_CATALOG / RLM_DATABRICKS_SCHEMA / RLM_DATABRICKS_VOLUME and that the volume exists"


class UcVolumeStore:
    def __init__(self, client: WorkspaceClient, root: str) -> None:
        root = posixpath.normpath(root)
        parts = root.split("/")
        if not root.startswith("/Volumes/") or len(parts) < 5 or not all(parts[2:5]):
            raise ValueError(f"volume root {root!r} must look like /Volumes/<catalog>/<schema>/<volume>[/folder]")
        self._client = client
        self.root = root

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def _resolve(self, path: str) -> str:
        # Same rule as LocalVolumeStore: relative paths go under root; nothing may escape it.
        full = posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(self.root, path))
        if full != self.root and not full.startswith(self.root + "/"):
            raise ValueError(f"volume path {path!r} is outside the volume root {self.root!r}")
        return full

    def write_text(self, path: str, text: str) -> None:
        """One PUT with ``overwrite=true``: the object store swaps the file whole, so readers never see half."""
        self.write_bytes(path, text.encode("utf-8"))

    def write_bytes(self, path: str, data: bytes) -> None:
        """As ``write_text``, for binary files (Job_B's payload wheel). (Not in the ``VolumeStore`` protocol.)"""
        full = self._resolve(path)
        try:
            self._client.files.upload(full, io.BytesIO(data), overwrite=True)
        except DatabricksError as exc:
            raise translate(exc, f"uploading {full}", not_found=_HINT) from exc

    def read_text(self, path: str) -> str:
        """The file's text; ``FileNotFoundError`` (an ``OSError``, as locally) when it is not there."""
        full = self._resolve(path)
        try:
            response = self._client.files.download(full)
            with response.contents as stream:
                data = stream.read()
        except NotFound as exc:
            raise FileNotFoundError(f"{full} is not in the volume (Files API 404: {exc})") from exc
        except DatabricksError as exc:
            raise translate(exc, f"downloading {full}") from exc
        return data.decode("utf-8")

    def exists(self, path: str) -> bool:
        full = self._resolve(path)
        try:
            self._client.files.get_metadata(full)
        except NotFound:
            return False
        except DatabricksError as exc:
            raise translate(exc, f"checking {full}") from exc
        return True

    def delete(self, path: str) -> bool:
        """Remove a file; False if it was not there. (Not in the ``VolumeStore`` protocol.)"""
        full = self._resolve(path)
        try:
            self._client.files.delete(full)
        except NotFound:
            return False
        except DatabricksError as exc:
            raise translate(exc, f"deleting {full}") from exc
        return True

    def list_names(self, path: str) -> list[str]:
        """The names in a folder (``GET /api/2.0/fs/directories/...``, every page); [] when it does not exist.
        (Not in the ``VolumeStore`` protocol.)"""
        full = self._resolve(path)
        try:
            return sorted(entry.name or posixpath.basename(entry.path or "")
                          for entry in self._client.files.list_directory_contents(full))
        except NotFound:
            return []
        except DatabricksError as exc:
            raise translate(exc, f"listing {full}") from exc

    def local_path(self, path: str) -> Path | None:
        return None

    def __repr__(self) -> str:
        return f"UcVolumeStore({self.root!r})"
