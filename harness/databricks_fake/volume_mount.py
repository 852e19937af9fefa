"""What Job_B's ``/Volumes`` is under the fake: a local folder with the FUSE mount's documented limits.

On real compute ``/Volumes`` is a FUSE mount over cloud storage; Databricks documents that it takes no direct
appends and no non-sequential (random) writes, and documents no rename. The fake maps ``/Volumes`` to its
folder for Job_B's subprocesses, and ``mount_environment`` makes those limits hold there too: it puts a copy
of ``volume_mount_site`` (whose ``sitecustomize`` installs the audit hook that refuses them) first on
``PYTHONPATH``, with the folder listed beside it (``volumes_mount.txt``), and names the folder in
``RLM_VOLUMES_MOUNT``, which also tells the executor's ``write_atomic`` that the folder is a volume (so it
writes the way the mount allows). Job_B's supervisor passes the folder on to its child as an argument, not
the variable: the child's environment is an allow-list; the copy on ``PYTHONPATH`` (which the allow-list
keeps) installs the hook there too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..files import write_atomic

VOLUMES_MOUNT_VARIABLE = "RLM_VOLUMES_MOUNT"  # = reference_agent.executor.files.VOLUMES_MOUNT_VARIABLE
SITE = Path(__file__).resolve().parent / "volume_mount_site"
ROOTS_FILE = "volumes_mount.txt"  # = volume_mount_site/sitecustomize.py's ROOTS_FILE


def mount_site(root: Path) -> Path:
    """A copy of ``volume_mount_site`` beside ``root`` that names ``root`` in its ``volumes_mount.txt``."""
    site = root.parent / f".{root.name}-mount-site"
    files = {"sitecustomize.py": (SITE / "sitecustomize.py").read_bytes(), ROOTS_FILE: f"{root}\n".encode()}
    for name, data in files.items():  # whole files only: a Job_B process of another run may be reading them
        path = site / name
        if not path.is_file() or path.read_bytes() != data:
            write_atomic(path, data, mode=0o644)
    return site


def mount_environment(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The variables that make ``root`` behave as a volume's mount in a Job_B process with environment ``env``."""
    path = os.pathsep.join(p for p in (str(mount_site(root)), env.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, VOLUMES_MOUNT_VARIABLE: str(root)}
