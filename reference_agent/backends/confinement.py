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
bridge's port only. Databricks' Job_B is not confined here: the workspace
confines its compute (docs/executor-confinement.md).
"""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..executor.confine import ConfinementUnavailable, create_pids_cgroup, remove_cgroup, support_report

__all__ = ["DEFAULT_CONFINEMENT", "ConfinementPolicy", "ConfinementUnavailable", "ProcessConfinement", "confinement_support"]

log = logging.getLogger(__name__)

_EXECUTOR_PACKAGE = str(Path(__file__).resolve().parents[1] / "executor")
# What a Python process and its extension modules read outside its own prefix: shared libraries, the loader's
# cache, time zones, user names. Nothing here holds a credential (no /etc/shadow, no home folders, no /proc).
_SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache", "/etc/ld.so.conf",
                "/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                "/etc/mime.types", "/dev/urandom", "/dev/random", "/dev/zero")
_DEVICES_WRITE = ("/dev/null",)

MIB = 1024 * 1024


@dataclass(frozen=True)
class ConfinementPolicy:
    """The limits a local Job_B process runs under (None: that limit is off). Defaults fit every scenario."""

    enabled: bool = True
    # Refuse to run code when this machine cannot give a protection (instead of warning once and running).
    required: bool = False
    memory_bytes: int | None = 4096 * MIB  # address space (RLIMIT_AS): Python, threads' arenas and the data
    cpu_seconds: int | None = 600  # CPU time of the process (a warm one: over all its blocks)
    file_bytes: int | None = 1024 * MIB  # largest file the code may write (RLIMIT_FSIZE)
    processes: int | None = 128  # processes and threads at once (pids cgroup as root, RLIMIT_NPROC otherwise)
    extra_read: tuple[str, ...] = field(default_factory=tuple)  # more folders the code may read

    def limits(self) -> dict[str, int | None]:
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds,
                "file_bytes": self.file_bytes, "processes": self.processes}


DEFAULT_CONFINEMENT = ConfinementPolicy()


def _interpreter_paths(python: str) -> set[str]:
    """Folders the child interpreter reads: its prefix (a venv's too) and the host's standard library.

    The child is ``python`` (``sys.executable`` by default); its prefix is two levels above the resolved
    binary, and a venv's base interpreter is the host's ``base_prefix``."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {value for key, value in sysconfig.get_paths().items()
              if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for binary in (python, os.path.realpath(python)):
        paths.add(str(Path(binary).parent.parent))
    return {p for p in paths if p}


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
        read = sorted(_interpreter_paths(python) | {_EXECUTOR_PACKAGE, *_SYSTEM_READ, *policy.extra_read, *read})
        self.spec: dict[str, Any] = {
            "read": read,
            "write": [workdir, *write, *_DEVICES_WRITE],
            "connect_ports": sorted(set(connect_ports)),
            "limits": policy.limits(),
            "cgroup": self.cgroup,
            "required": policy.required,
        }

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
