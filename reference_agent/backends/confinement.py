"""What the local Job_B may touch: the confinement spec each executor process applies to itself.

The code Job_B runs is model-written, so the local executor confines it by the
kernel before the first block (``reference_agent.executor.confine``: Landlock
for files and TCP, rlimits for memory, CPU time, file size and processes, a
pids cgroup where the user is root). This module is the host's half: it decides
what one process may read, write and connect to, makes the pids cgroup, and
says once per host process which protection this machine cannot give.

Reads: the interpreter, its standard library and installed packages, the
executor package, the system's shared libraries and a few harmless files of
``/etc``. Writes: the process's own temp work dir and the volume folders of the
block (artifacts, results, namespace snapshots). Network: TCP connect to the LM
bridge's port only. The spec itself is ``executor/sandbox.py``'s, which Job_B's
supervisor on Databricks builds for its child the same way (``executor/supervisor.py``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..executor import sandbox
from ..executor.confine import ConfinementUnavailable, create_pids_cgroup, remove_cgroup, support_report

__all__ = ["DEFAULT_CONFINEMENT", "ConfinementPolicy", "ConfinementUnavailable", "ProcessConfinement", "confinement_support"]

log = logging.getLogger(__name__)

MIB = sandbox.MIB


@dataclass(frozen=True)
class ConfinementPolicy:
    """The limits a local Job_B process runs under (None: that limit is off). Defaults fit every scenario."""

    enabled: bool = True
    # Refuse to run code when this machine cannot give a protection (instead of warning once and running).
    required: bool = False
    # The defaults are the executor's (sandbox.DEFAULT_LIMITS), which Job_B on Databricks applies too.
    memory_bytes: int | None = sandbox.DEFAULT_LIMITS["memory_bytes"]  # address space (RLIMIT_AS)
    cpu_seconds: int | None = sandbox.DEFAULT_LIMITS["cpu_seconds"]  # CPU time (a warm process: all its blocks)
    file_bytes: int | None = sandbox.DEFAULT_LIMITS["file_bytes"]  # largest file the code may write (RLIMIT_FSIZE)
    processes: int | None = sandbox.DEFAULT_LIMITS["processes"]  # processes and threads at once
    extra_read: tuple[str, ...] = field(default_factory=tuple)  # more folders the code may read

    def limits(self) -> dict[str, int | None]:
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds,
                "file_bytes": self.file_bytes, "processes": self.processes}


DEFAULT_CONFINEMENT = ConfinementPolicy()


@dataclass(frozen=True)
class BlockFolders:
    """A block's volume folders: ``write`` holds the artifact, the result and the namespace snapshot (the
    executor writes them under temp names and renames), ``read`` the context (an input, shared by sessions)."""

    write: tuple[str, ...]
    read: tuple[str, ...] = ()

    @classmethod
    def of(cls, *written: str | None, context: str | None = None) -> BlockFolders:
        write = tuple(sorted({str(Path(f).parent) for f in written if f}))
        read = (str(Path(context).parent),) if context and str(Path(context).parent) not in write else ()
        return cls(write=write, read=read)


NO_FOLDERS = BlockFolders(write=())


class ProcessConfinement:
    """The spec for one executor process and the pids cgroup it joins; ``close()`` removes the cgroup."""

    def __init__(self, policy: ConfinementPolicy, *, python: str, workdir: str, write: Sequence[str],
                 connect_ports: Sequence[int], read: Sequence[str] = ()) -> None:
        self.policy = policy
        self.cgroup = create_pids_cgroup(policy.processes) if policy.processes and _is_root() else None
        self.spec: dict[str, Any] = sandbox.confinement_spec(
            python=python, workdir=workdir, write=write, read=[*policy.extra_read, *read],
            connect_ports=connect_ports, limits=policy.limits(), cgroup=self.cgroup, required=policy.required)

    def argv(self) -> list[str]:
        import json

        return ["--confine", json.dumps(self.spec, separators=(",", ":"))]

    def close(self) -> None:
        if self.cgroup is not None:
            remove_cgroup(self.cgroup)
            self.cgroup = None


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_reported_lock = threading.Lock()
_reported = False


def confinement_support(policy: ConfinementPolicy) -> dict[str, Any]:
    """What this machine can give the local Job_B; logged once per host process when something is missing.

    Raises ``ConfinementUnavailable`` when the policy requires confinement and a protection is missing."""
    global _reported
    found = support_report()
    # In the words of a block's result JSON: what the executor applies, what it runs without and why.
    report = {"applied": list(found.get("available") or []), "missing": list(found.get("unavailable") or []),
              "landlock_abi": found.get("landlock_abi"), "platform": found.get("platform")}
    missing = report["missing"]
    if missing and policy.required:
        raise ConfinementUnavailable(report)  # names each missing protection and how to run without
    with _reported_lock:
        if missing and not _reported:
            _reported = True
            log.warning("The local Job_B runs WITHOUT %s: %s", ", ".join(m["protection"] for m in missing),
                        "; ".join(f"{m['protection']}: {m['reason']}" for m in missing))
    return report
