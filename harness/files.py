"""Writing a file so that readers see the old content or the new, never half of it.

Cassettes, snapshots, reports and the workspace fake's volume write this way. (The reference agent
has the same helper for Job_B; the harness keeps its own so its core imports nothing of the agent.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = False) -> None:
    """A temporary file beside ``path``, then ``os.replace``; nothing is left behind if the write fails.

    ``mode``: the file's permissions (mkstemp makes 0600; a file others review wants 0644).
    ``durable``: fsync before the rename, for files that must survive a crash of the machine.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
