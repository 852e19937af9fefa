"""The Python a Job_B compute runs, and what its access mode allows.

Databricks Runtime (DBR) → Python, from the runtimes' release notes ("System environment"): every release of a
major line ships the same Python minor. LTS releases: 10.4 → 3.8, 11.3 and 12.2 → 3.9, 13.3 and 14.3 → 3.10,
15.4 → 3.11, 16.4 and 17.3 → 3.12. A runtime not in the table is reported as unknown (a warning), never guessed.
Serverless environment versions: 1 → 3.10, 2 → 3.11, 3 → 3.12, 4 → 3.12.
"""

from __future__ import annotations

import re

# major -> (last minor released in that line, Python (major, minor))
_DBR_LINES: dict[int, tuple[int, tuple[int, int]]] = {
    10: (5, (3, 8)), 11: (3, (3, 9)), 12: (2, (3, 9)), 13: (3, (3, 10)), 14: (3, (3, 10)),
    15: (4, (3, 11)), 16: (4, (3, 12)), 17: (3, (3, 12)),
}
LTS = {(10, 4), (11, 3), (12, 2), (13, 3), (14, 3), (15, 4), (16, 4), (17, 3)}
SERVERLESS_PYTHON: dict[str, tuple[int, int]] = {"1": (3, 10), "2": (3, 11), "3": (3, 12), "4": (3, 12)}
PAYLOAD_PYTHON = ((3, 10), (3, 12))  # what Job_B's payload supports (tests/test_python_versions.py)
_SPARK_VERSION = re.compile(r"^(\d+)\.(\d+)\.x-")


def dbr_release(spark_version: str) -> tuple[int, int] | None:
    """``(15, 4)`` from ``15.4.x-scala2.12`` (also ``-cpu-ml-``, ``-photon-`` ...); None if it is not that shape."""
    match = _SPARK_VERSION.match(spark_version or "")
    return (int(match[1]), int(match[2])) if match else None


def dbr_python(spark_version: str) -> tuple[int, int] | None:
    """The Python of a runtime key, or None when the runtime is not in the table."""
    release = dbr_release(spark_version)
    if release is None or release[0] not in _DBR_LINES:
        return None
    last_minor, python = _DBR_LINES[release[0]]
    return python if release[1] <= last_minor else None


def serverless_python(environment_version: str) -> tuple[int, int] | None:
    match = re.match(r"^(?:client\.)?(\d+)", str(environment_version).strip())
    return SERVERLESS_PYTHON.get(match[1]) if match else None


def in_payload_range(python: tuple[int, int]) -> bool:
    low, high = PAYLOAD_PYTHON
    return low <= python <= high


def dotted(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


# access mode -> (level, what it means for Job_B). UC volumes (/Volumes paths) and UC tables need a UC access mode.
ACCESS_MODES: dict[str, tuple[str, str]] = {
    "SINGLE_USER": ("ok", "dedicated (single user): Unity Catalog, /Volumes paths and spark_python_task all work"),
    "DATA_SECURITY_MODE_DEDICATED": ("ok", "dedicated: Unity Catalog, /Volumes paths and spark_python_task all "
                                           "work"),
    "USER_ISOLATION": ("ok", "standard (shared): Unity Catalog and /Volumes paths work (DBR 13.3 LTS and later); "
                             "Python runs sandboxed, which Job_B's subprocess has not yet been confirmed under"),
    "DATA_SECURITY_MODE_STANDARD": ("ok", "standard: Unity Catalog and /Volumes paths work; Python runs "
                                          "sandboxed, which Job_B's subprocess has not yet been confirmed under"),
    "DATA_SECURITY_MODE_AUTO": ("ok", "auto: Databricks picks dedicated or standard, both with Unity Catalog"),
    "NONE": ("error", "no isolation: no Unity Catalog, so neither the volume (/Volumes paths) nor the tables are "
                      "reachable from Job_B"),
}
LEGACY_MODE = ("error", "a legacy access mode without Unity Catalog: /Volumes paths are not available to Job_B")
