"""Volume store: where artifacts, context data and Job_B results live.

Paths are *volume path strings* (POSIX, rooted at ``root``) so that the same
string names a file in a local folder and in a Unity Catalog volume
(``/Volumes/cat/schema/vol/...``); only ``local_path`` knows about the machine.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..executor.files import write_atomic


@runtime_checkable
class VolumeStore(Protocol):
    root: str

    def path(self, *parts: str) -> str:
        """A volume path: ``parts`` joined under ``root``."""
        ...

    def write_text(self, path: str, text: str) -> None:
        """Write atomically: readers see the old file or the new one, never half of it."""
        ...

    def read_text(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def local_path(self, path: str) -> Path | None:
        """A filesystem path a local process can open, or None for a remote store."""
        ...


class LocalVolumeStore:
    """A folder on this machine standing in for a UC volume."""

    def __init__(self, root: Path | str) -> None:
        self._root = Path(root).expanduser().resolve()
        self._root.mkdir(parents=True, exist_ok=True)
        self.root = self._root.as_posix()

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def _resolve(self, path: str) -> Path:
        # Relative paths are taken under root; anything that escapes root is refused,
        # so a volume path built from model-written names cannot reach other files.
        candidate = Path(path) if posixpath.isabs(path) else self._root / path
        resolved = candidate.resolve()
        if resolved != self._root and self._root not in resolved.parents:
            raise ValueError(f"volume path {path!r} is outside the volume root {self.root!r}")
        return resolved

    def write_text(self, path: str, text: str) -> None:
        write_atomic(self._resolve(path), text.encode("utf-8"))

    def read_text(self, path: str) -> str:
        return self._resolve(path).read_text(encoding="utf-8")

    def exists(self, path: str) -> bool:
        return self._resolve(path).exists()

    def local_path(self, path: str) -> Path | None:
        return self._resolve(path)

    def __repr__(self) -> str:
        return f"LocalVolumeStore({self.root!r})"
