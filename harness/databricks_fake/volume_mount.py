"""What Job_B's ``/Volumes`` is under the fake: a local folder with the FUSE mount's documented limits.

On real compute ``/Volumes`` is a FUSE mount over cloud storage; Databricks documents that it takes no direct
appends and no non-sequential (random) writes, and documents no rename. The fake maps ``/Volumes`` to its
folder for Job_B's subprocesses, and ``mount_environment`` makes those limits hold there too: it puts
``volume_mount_site`` (whose ``sitecustomize`` installs the audit hook that refuses them) first on
``PYTHONPATH`` and names the folder in ``RLM_VOLUMES_MOUNT``, which also tells the executor's ``write_atomic``
that the folder is a volume (so it writes the way the mount allows).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

VOLUMES_MOUNT_VARIABLE = "RLM_VOLUMES_MOUNT"  # = reference_agent.executor.files.VOLUMES_MOUNT_VARIABLE
SITE = Path(__file__).resolve().parent / "volume_mount_site"


def mount_environment(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The variables that make ``root`` behave as a volume's mount in a Job_B process with environment ``env``."""
    path = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, VOLUMES_MOUNT_VARIABLE: str(root)}
