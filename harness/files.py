"""Writing a file so that readers see the old content or the new, never half of it.

Cassettes, snapshots, reports and the workspace fake's volume write this way. (The reference agent
has the same helper for Job_B; the harness keeps its own so its core imports nothing of the agent.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["StagedFile", "write_atomic"]


class StagedFile:
    """A temporary file beside ``path``, written in pieces, that becomes ``path`` on ``commit()``.

    For output too large to hold whole (a report of hundreds of scenarios): written as it is produced, and
    readers of ``path`` see the old content until ``commit()``. ``discard()`` removes it (safe to repeat).
    ``mode``: the file's permissions; None: the replaced file's own, else what ``open()`` would give a new file
    (``_default_mode``) — not mkstemp's 0600, which hid the scenarios and profiles ``init`` wrote from a team.
    """

    def __init__(self, path: Path, *, mode: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        mode = mode if mode is not None else _mode_of(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self.tmp = Path(tmp)
        try:
            os.fchmod(fd, mode)
            self._handle = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            self.tmp.unlink(missing_ok=True)
            raise

    def write(self, data: bytes) -> None:
        self._handle.write(data)

    def finish(self, *, durable: bool = False) -> None:
        """Close the file; ``durable``: fsync first, for files that must survive a crash of the machine."""
        if durable:
            self._handle.flush()
            os.fsync(self._handle.fileno())
        self._handle.close()

    def commit(self) -> None:
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        try:
            self._handle.close()
        except OSError:
            pass
        self.tmp.unlink(missing_ok=True)


def _default_mode() -> int:
    """What ``open()`` gives a new file: 0666 less the process's umask (read from /proc where it can be: setting
    the umask to read it back would change it for a moment for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            umask = next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


def _mode_of(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return _default_mode()


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = False) -> None:
    """A temporary file beside ``path``, then ``os.replace``; nothing is left behind if the write fails.

    ``mode``: the file's permissions (None: as ``StagedFile``: the old file's, else ``_default_mode``).
    ``durable``: fsync before the rename, for files that must survive a crash of the machine.
    """
    staged = StagedFile(path, mode=mode)
    try:
        staged.write(data)
        staged.finish(durable=durable)
        staged.commit()
    except BaseException:
        staged.discard()
        raise
