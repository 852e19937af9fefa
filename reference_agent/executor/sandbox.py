"""What the process that runs model-written code is given: an allow-listed environment and its confinement spec.

One definition for every Job_B host: the local job runners (``reference_agent.backends``)
and Job_B's supervisor on Databricks (``supervisor.py``, in the payload wheel) start
the executor with ``allowed_env`` and ``confinement_spec`` (applied by the child
itself, ``confine.py``). Standard library only.

Environment: ``PATH`` and ``LANG`` of the starting process, ``HOME`` = the child's
private work dir, ``PYTHONPATH`` as the host says, a fixed ``PYTHONHASHSEED`` (set
iteration order, and so printed output, repeats between record and replay) and
``PYTHONIOENCODING``. Nothing else: no ``*_KEY``, ``*_TOKEN``, ``GOOGLE_*``,
``DATABRICKS_*``.

Confinement: reads of the interpreter, its packages, the executor package, the
system's shared libraries and a few harmless files of ``/etc`` (plus what the host
adds); writes in the work dir and the block's folders; TCP connect to the LM
bridge's port only.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from typing import Any

PASSED_ENV = ("PATH", "LANG")
# What a Python process and its extension modules read outside its own prefix: shared libraries, the loader's
# cache, time zones, user names. Nothing here holds a credential (no /etc/shadow, no home folders, no /proc).
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache", "/etc/ld.so.conf",
               "/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
               "/etc/mime.types", "/dev/urandom", "/dev/random", "/dev/zero")
DEVICES_WRITE = ("/dev/null",)
EXECUTOR_PACKAGE = os.path.dirname(os.path.abspath(__file__))

MIB = 1024 * 1024
DEFAULT_LIMITS: dict[str, int | None] = {
    "memory_bytes": 4096 * MIB,  # address space (RLIMIT_AS): Python, threads' arenas and the data
    "cpu_seconds": 600,  # CPU time of the process (a warm one: over all its blocks)
    "file_bytes": 1024 * MIB,  # largest file the code may write (RLIMIT_FSIZE)
    "processes": 128,  # processes and threads at once (pids cgroup as root, RLIMIT_NPROC otherwise)
}


def allowed_env(workdir: str, pythonpath: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's whole environment (see the module doc); ``environ`` is the starting process's."""
    environ = os.environ if environ is None else environ
    env = {name: environ[name] for name in PASSED_ENV if name in environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = workdir
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in pythonpath if p))
    env["PYTHONHASHSEED"] = environ.get("PYTHONHASHSEED") or "0"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def interpreter_paths(python: str) -> set[str]:
    """Folders the child interpreter reads: its prefix (a venv's too) and the host's standard library.

    The child is ``python`` (``sys.executable`` by default); its prefix is two levels above the resolved
    binary, and a venv's base interpreter is the host's ``base_prefix``."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {value for key, value in sysconfig.get_paths().items()
              if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for binary in (python, os.path.realpath(python)):
        paths.add(os.path.dirname(os.path.dirname(binary)))
    return {p for p in paths if p}


def confinement_spec(*, python: str, workdir: str, write: Iterable[str], read: Iterable[str] = (),
                     connect_ports: Iterable[int] = (), limits: Mapping[str, int | None] | None = None,
                     cgroup: str | None = None, required: bool = False) -> dict[str, Any]:
    """The ``--confine`` spec of one executor process (``confine.py`` validates and applies it)."""
    return {
        "read": sorted(interpreter_paths(python) | {EXECUTOR_PACKAGE, *SYSTEM_READ, *read}),
        "write": [workdir, *write, *DEVICES_WRITE],
        "connect_ports": sorted(set(connect_ports)),
        "limits": dict(DEFAULT_LIMITS if limits is None else limits),
        "cgroup": cgroup,
        "required": required,
    }
