"""Writing a file so that readers see the old content or the new, never half of it.

Stdlib only, like the rest of the executor package, so Job_B can use it; the
volume store, the workspace fake, cassettes and reports write the same way.

On a Unity Catalog volume's ``/Volumes`` mount (FUSE over cloud storage) the
temporary-file-then-rename dance does not hold: Databricks documents that
direct appends and non-sequential (random) writes are not supported there
("perform the operations on a local disk first and then copy the results"),
and documents no rename (users report ``ENOSYS`` for rename and link on
``/Volumes``). So there the file is written whole, sequentially, in one pass
under its final name; whoever reads it waits for the writer to end (the job
runner reads Job_B's result only once the run has TERMINATED).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Extra folders that are a volume's FUSE mount, os.pathsep-separated (the workspace fake sets it for Job_B,
# whose /Volumes it maps to a local folder); /Volumes itself always is.
VOLUMES_MOUNT_VARIABLE = "RLM_VOLUMES_MOUNT"
_declared_mounts: list[str] = []  # given by a process that must not have the variable (Job_B's child: --volume-mounts)


def volume_mounts() -> list[str]:
    """The folders ``RLM_VOLUMES_MOUNT`` and ``declare_volume_mounts`` name (not ``/Volumes``, which always is one)."""
    named = (r for r in os.environ.get(VOLUMES_MOUNT_VARIABLE, "").split(os.pathsep) if r)
    return list(dict.fromkeys([*named, *_declared_mounts]))


def declare_volume_mounts(value: str) -> None:
    """Treat the folders of ``value`` (``os.pathsep``-separated, as the variable) as volume mounts in this process."""
    _declared_mounts.extend(r for r in value.split(os.pathsep) if r and r not in _declared_mounts)


def on_volume_mount(path: Path) -> bool:
    """Whether ``path`` is on a volume's FUSE mount (``/Volumes/...``, or a folder of ``volume_mounts()``)."""
    text = os.path.abspath(path)
    return any(text.startswith(root.rstrip("/") + "/") for root in ["/Volumes", *volume_mounts()])


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, durable: bool = False) -> None:
    """A temporary file beside ``path``, then ``os.replace``; nothing is left behind if the write fails.

    ``mode``: the file's permissions (mkstemp makes 0600; a file others review wants 0644).
    ``durable``: fsync before the rename, for files that must survive a crash of the machine.
    On a volume's mount (``on_volume_mount``): one sequential write under the final name, see the module
    docstring; a failed write removes the file rather than leave half of it (``mode`` is left to the volume's
    grants: the mount has no POSIX permissions to set).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if on_volume_mount(path):
        try:
            with open(path, "wb") as handle:  # truncate and write from offset 0: no append, no seek
                handle.write(data)
                if durable:
                    handle.flush()
                    os.fsync(handle.fileno())
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise
        return
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
