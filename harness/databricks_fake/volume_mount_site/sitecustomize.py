"""Job_B under the workspace fake: the documented limits of a volume's /Volumes FUSE mount, on its stand-in folder.

``site`` imports this module in every Job_B process the fake starts (a copy of it, in a folder first on
``PYTHONPATH``; see ``harness/databricks_fake/volume_mount.py``). An audit hook refuses, under the folders in
``RLM_VOLUMES_MOUNT`` and those listed in ``volumes_mount.txt`` beside the copy (what reaches Job_B's child, whose
environment is an allow-list without the variable), what the mount does not support, as the mount would (an
``OSError`` from the call):

* direct appends (``O_APPEND``) and updating an existing file in place (opened for writing without truncation),
  the documented "direct-append or non-sequential (random) writes are not supported";
* rename and hard links (``ENOSYS``): not documented to work on volumes, and reported to fail there.

Writing a file whole (``open(path, "wb")``), reading, listing and deleting are left alone. Seeks within a file
opened for a fresh write are not seen (an audit hook cannot); the open-time rules catch the usual culprits.
"""

import errno
import os
import sys

_VARIABLE = "RLM_VOLUMES_MOUNT"  # = reference_agent.executor.files.VOLUMES_MOUNT_VARIABLE
ROOTS_FILE = "volumes_mount.txt"  # one folder a line, beside this file
_ADVICE = "write the whole file in one go under its final name, or write it on local disk and copy it"


def _listed() -> list:
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), ROOTS_FILE), encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def _install() -> None:
    named = [*os.environ.get(_VARIABLE, "").split(os.pathsep), *_listed()]
    roots = tuple(dict.fromkeys(r.rstrip("/") + "/" for r in named if r))
    if not roots:
        return

    def inside(path: object) -> bool:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False  # a file descriptor
        return os.path.abspath(os.fsdecode(path)).startswith(roots)

    def refuse(code: int, what: str, path: object) -> None:
        raise OSError(code, f"{what} is not supported on a Unity Catalog volume (the /Volumes FUSE mount): "
                            f"{_ADVICE}", os.fsdecode(path))

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, _mode, flags = args
            if flags is None or not inside(path):
                return
            if flags & os.O_APPEND:
                refuse(errno.EOPNOTSUPP, "a direct append", path)
            writable = flags & (os.O_WRONLY | os.O_RDWR)
            if writable and not flags & (os.O_TRUNC | os.O_EXCL) and os.path.exists(path):
                refuse(errno.EOPNOTSUPP, "a non-sequential write (updating an existing file in place)", path)
        elif event in ("os.rename", "os.link") and (inside(args[0]) or inside(args[1])):
            refuse(errno.ENOSYS, "a rename or link" if event == "os.rename" else "a hard link", args[1])

    sys.addaudithook(hook)


_install()
