"""Confine the process that runs model-written code, by the kernel: a pids cgroup, rlimits, Landlock.

The child calls ``apply_confinement(spec)`` once, after its own imports and before any analyst
code; everything it sets holds for the rest of the process and for every process the code
starts. No root, daemon or dependency is needed (root adds the pids cgroup). The spec comes
from the host (``--confine``)::

    {"read": [paths], "write": [paths], "connect_ports": [ints],
     "limits": {"memory_bytes": int|None, "cpu_seconds": int|None, "file_bytes": int|None, "processes": int|None},
     "cgroup": "/sys/fs/cgroup/pids/rlm-exec-XXXX" | None,   # made by create_pids_cgroup() on the host
     "required": bool}

Order: join the cgroup (while /sys is still writable) -> rlimits (soft = hard, so the code
cannot raise them) -> as root, drop every capability (else CAP_SYS_RESOURCE could raise the hard
limits again) -> Landlock: only the read/write paths, TCP connect only to ``connect_ports``,
no TCP bind, signals and abstract Unix sockets scoped to the sandbox (ABI 6+).

Besides the spec's paths the child may always read: the interpreter (``sys.prefix``,
``sys.base_prefix``, the exec prefixes), this package, the loader and system libraries and time
zones (``RUNTIME_READ_PATHS``), its own ``/proc/<pid>`` (not other processes': their ``environ``
holds the host's credentials), and read/write ``/dev/null``. Nothing else: the host gives the
data, the artifact directory, a private temporary directory (``TMPDIR``) and the LM bridge's port.
Landlock covers TCP only: UDP and pathname Unix sockets are not restricted by it.

The report: ``{"applied": [...], "missing": [{"protection", "reason"}], "extra": [...], "abi": n,
"seconds": t}``; ``applied``/``missing`` name ``PROTECTIONS``; ``extra`` names hardening beyond
them ("no_new_privs", "capabilities_dropped", "signals_scoped", "abstract_unix_sockets_scoped").
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import sys
import time
from typing import Any

from . import landlock

try:  # imported with the executor, not when confining: later the interpreter's files may be out of reach
    import resource
except ImportError:  # not Unix
    resource = None  # type: ignore[assignment]

PROTECTIONS = ("filesystem_write", "filesystem_read", "network", "memory", "cpu_time", "file_size", "processes")

SPEC_KEYS = ("read", "write", "connect_ports", "limits", "cgroup", "required")
LIMIT_KEYS = ("memory_bytes", "cpu_seconds", "file_bytes", "processes")
HOW_TO_RUN_WITHOUT = ("to run with what this machine gives (and say what is missing once), drop the requirement: "
                      "unset RLM_REQUIRE_CONFINEMENT, or run rlm-conformance without --require-confinement "
                      "(docs/executor-confinement.md)")

_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_applied_report: dict[str, Any] | None = None  # a process is confined once (Landlock layers are capped at 16)
_applied_limits: dict[str, Any] = {}  # the spec's limits, to name them when code hits one


class ConfinementUnavailable(RuntimeError):
    """``required`` confinement that this machine or process cannot give; ``report`` says what was applied."""

    def __init__(self, report: dict[str, Any]):
        self.report = report
        by_reason: dict[str, list[str]] = {}
        for item in report["missing"]:
            by_reason.setdefault(item["reason"], []).append(item["protection"])
        missing = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in by_reason.items())
        super().__init__(f"confinement required but not available — {missing}; {HOW_TO_RUN_WITHOUT}")


class InvalidConfinementSpec(ValueError):
    """A ``--confine`` spec with a wrong key or value (a host bug: the message names the key)."""


def is_linux() -> bool:
    return sys.platform.startswith("linux")


# --- the spec -----------------------------------------------------------------------------------------

def load_spec(value: str) -> dict[str, Any]:
    """``--confine``'s value: a JSON object, or ``@path`` to a file holding one."""
    source = "--confine"
    if value.startswith("@"):
        source = value[1:]
        try:
            with open(source, encoding="utf-8") as handle:
                value = handle.read()
        except OSError as exc:
            raise InvalidConfinementSpec(f"--confine {source}: cannot read the spec file: {exc}") from None
    try:
        spec = json.loads(value)
    except json.JSONDecodeError as exc:
        raise InvalidConfinementSpec(f"{source}: the confinement spec is not valid JSON: {exc}") from None
    validate_spec(spec)
    return spec


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        raise InvalidConfinementSpec(f"the confinement spec must be a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise InvalidConfinementSpec(f"confinement spec: unknown key(s) {unknown}; known: {list(SPEC_KEYS)}")
    for key in ("read", "write"):
        paths = spec.get(key, [])
        if not isinstance(paths, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in paths):
            raise InvalidConfinementSpec(f"confinement spec: {key!r} must be a list of absolute paths, got {paths!r}")
    ports = spec.get("connect_ports", [])
    if not isinstance(ports, list) or not all(_is_int(p) and 0 < p < 65536 for p in ports):
        raise InvalidConfinementSpec(f"confinement spec: 'connect_ports' must be a list of ports 1-65535, got {ports!r}")
    limits = spec.get("limits") or {}
    if not isinstance(limits, dict):
        raise InvalidConfinementSpec(f"confinement spec: 'limits' must be an object, got {limits!r}")
    unknown = sorted(set(limits) - set(LIMIT_KEYS))
    if unknown:
        raise InvalidConfinementSpec(f"confinement spec: unknown limit(s) {unknown}; known: {list(LIMIT_KEYS)}")
    for key, value in limits.items():
        if value is not None and not (_is_int(value) and value > 0):
            raise InvalidConfinementSpec(f"confinement spec: limits.{key} must be a positive integer or null, "
                                         f"got {value!r}")
    cgroup = spec.get("cgroup")
    if cgroup is not None and not (isinstance(cgroup, str) and os.path.isabs(cgroup)):
        raise InvalidConfinementSpec(f"confinement spec: 'cgroup' must be an absolute path or null, got {cgroup!r}")
    if not isinstance(spec.get("required", False), bool):
        raise InvalidConfinementSpec(f"confinement spec: 'required' must be true or false, got {spec['required']!r}")


# --- applying it ----------------------------------------------------------------------------------------

class _Report:
    def __init__(self) -> None:
        self.applied: list[str] = []
        self.missing: dict[str, str] = {}
        self.extra: list[str] = []

    def ok(self, protection: str) -> None:
        if protection not in self.applied and protection not in self.missing:
            self.applied.append(protection)

    def miss(self, protection: str, reason: str) -> None:
        if protection in self.applied:
            self.applied.remove(protection)
        self.missing.setdefault(protection, reason)

    def as_dict(self, abi: int, started: float) -> dict[str, Any]:
        order = {name: i for i, name in enumerate(PROTECTIONS)}
        return {"applied": sorted(self.applied, key=order.__getitem__),
                "missing": [{"protection": p, "reason": self.missing[p]} for p in PROTECTIONS if p in self.missing],
                "extra": self.extra, "abi": abi, "seconds": round(time.perf_counter() - started, 6)}


def apply_confinement(spec: dict[str, Any]) -> dict[str, Any]:
    """Confine this process as ``spec`` says (see the module doc); the report of what holds.

    Raises ``ConfinementUnavailable`` when ``spec["required"]`` and anything is missing, and
    ``InvalidConfinementSpec`` for a malformed spec. Call it while the process has one thread:
    Landlock and capabilities bind the calling thread (and what it starts) only.
    """
    global _applied_report
    validate_spec(spec)
    if _applied_report is not None:
        return _applied_report
    started = time.perf_counter()
    report = _Report()
    limits = spec.get("limits") or {}
    threads = _thread_count()
    joined = _join_cgroup(spec.get("cgroup"), report)
    _set_rlimits(limits, joined, report)
    if is_linux() and os.geteuid() == 0:
        _drop_capabilities(report, threads)
    abi = _apply_landlock(spec, report, threads)
    result = report.as_dict(abi, started)
    _applied_report = result
    _applied_limits.update(limits)
    if spec.get("required") and result["missing"]:
        raise ConfinementUnavailable(result)
    return result


def _mib(value: Any) -> str:
    return f"{value / (1024 * 1024):g} MiB" if isinstance(value, int) else "its limit"


def blocked_reason(exc: BaseException) -> str | None:
    """Why this process's confinement most likely stopped ``exc``, in words for the code's author (the block's
    error message, which the analyst reads next); None when it was not confined or ``exc`` is no such stop."""
    if _applied_report is None:
        return None
    applied = set(_applied_report["applied"])
    code = getattr(exc, "errno", None)
    if isinstance(exc, MemoryError) and "memory" in applied:
        return (f"this executor's memory limit is {_mib(_applied_limits.get('memory_bytes'))} of address space "
                f"(RLIMIT_AS); work on smaller pieces")
    if code == errno.EFBIG and "file_size" in applied:
        return f"files may not grow past {_mib(_applied_limits.get('file_bytes'))} here (RLIMIT_FSIZE)"
    if code == errno.EAGAIN and isinstance(exc, BlockingIOError) and "processes" in applied:
        return (f"at most {_applied_limits.get('processes')} processes and threads may run here at once "
                f"(the executor's process cap)")
    if isinstance(exc, PermissionError) and code in (errno.EACCES, errno.EPERM):
        if getattr(exc, "filename", None) is None and "network" in applied:
            return "the only network connection allowed is the LM bridge (llm_query); no other TCP connect or bind"
        if getattr(exc, "filename", None) is not None and "filesystem_write" in applied:
            return ("the code may write only in its work dir and the volume folders of its block, and read only "
                    "Python, its packages and its inputs")
    return None


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _join_cgroup(cgroup: str | None, report: _Report) -> bool:
    if not cgroup:
        return False
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        return True
    except OSError as exc:
        report.miss("processes", f"could not join the pids cgroup {cgroup}: {exc}")
        return False


def _set_limit(name: str, value: int, hard_extra: int = 0) -> None:
    which = getattr(resource, name)
    _, hard = resource.getrlimit(which)
    want_hard = value + hard_extra
    if hard != resource.RLIM_INFINITY and hard < want_hard:  # already stricter: keep it (cannot raise it anyway)
        want_hard = hard
    resource.setrlimit(which, (min(value, want_hard), want_hard))


def _set_rlimits(limits: dict[str, Any], joined_cgroup: bool, report: _Report) -> None:
    if resource is None:
        for protection, key in (("memory", "memory_bytes"), ("cpu_time", "cpu_seconds"), ("file_size", "file_bytes"),
                                ("processes", "processes")):
            if limits.get(key):
                report.miss(protection, f"no rlimits on this platform ({sys.platform}): the resource module is missing")
        return
    for protection, key, name, hard_extra in (("memory", "memory_bytes", "RLIMIT_AS", 0),
                                              ("cpu_time", "cpu_seconds", "RLIMIT_CPU", 1),
                                              ("file_size", "file_bytes", "RLIMIT_FSIZE", 0)):
        if limits.get(key) is None:
            continue
        try:
            _set_limit(name, limits[key], hard_extra)
            report.ok(protection)
        except (AttributeError, ValueError, OSError) as exc:
            report.miss(protection, f"{name} could not be set: {exc}")
    if limits.get("processes") is None:
        return
    if joined_cgroup:
        report.ok("processes")
        return
    if is_linux() and os.getuid() == 0:
        report.miss("processes", "process cap not enforced: running as root, whom RLIMIT_NPROC exempts, and no "
                                 "pids cgroup was given (the host creates one when it runs as root and a pids "
                                 "cgroup hierarchy is writable)")
        return
    try:
        # RLIMIT_NPROC counts every task of the real uid on the machine, not this process's children.
        _set_limit("RLIMIT_NPROC", _tasks_of_uid(os.getuid()) + limits["processes"])
        report.ok("processes")
    except (AttributeError, ValueError, OSError) as exc:
        report.miss("processes", f"RLIMIT_NPROC could not be set: {exc}")


def _tasks_of_uid(uid: int) -> int:
    """Tasks (threads included) whose real uid is ``uid``, as RLIMIT_NPROC counts them."""
    if not is_linux():
        import subprocess

        done = subprocess.run(["ps", "-U", str(uid), "-o", "pid="], capture_output=True, text=True, check=False)
        return max(len(done.stdout.splitlines()), 1)
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8", errors="replace") as handle:
                real_uid = threads = None
                for line in handle:
                    if line.startswith("Uid:"):
                        real_uid = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
        if real_uid == uid and threads:
            count += threads
    return count


def _drop_capabilities(report: _Report, threads: int) -> None:
    """Root keeps uid 0 but loses every capability, now and across exec (bounding set emptied).

    Without CAP_SYS_RESOURCE the hard rlimits cannot be raised again; without the others the
    code cannot mount, load modules, change owners, or bypass file modes.
    """
    lib = landlock.libc()
    try:
        if threads > 1:
            raise OSError(errno.EBUSY, f"the process already has {threads} threads; capabilities are per thread")
        with open("/proc/sys/kernel/cap_last_cap", encoding="utf-8") as handle:
            last = int(handle.read())
        for cap in range(last + 1):
            if lib.prctl(ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0),
                         ctypes.c_ulong(0)) != 0 and ctypes.get_errno() != errno.EINVAL:
                raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")
        lib.prctl(ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0),
                  ctypes.c_ulong(0), ctypes.c_ulong(0))  # EINVAL before Linux 4.3: nothing to clear then

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                        ("inheritable", ctypes.c_uint32)]

        header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (Data * 2)()  # version 3: two 32-bit words per set, all zero
        if lib.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
            raise OSError(ctypes.get_errno(), f"capset: {os.strerror(ctypes.get_errno())}")
        report.extra.append("capabilities_dropped")
    except (OSError, ValueError, AttributeError) as exc:
        for protection in ("memory", "cpu_time", "file_size"):
            if protection in report.applied:
                report.miss(protection, f"running as root and the capabilities could not be dropped ({exc}): the "
                                        "code could raise the limit again (CAP_SYS_RESOURCE)")


# What the stdlib needs from the system besides the interpreter's own tree: the dynamic loader and
# the shared libraries C extensions link to (zlib, sqlite3, ssl, lzma ... and ld.so itself, which an
# exec of python opens), and the time zone data. Read-only, and no secrets there.
RUNTIME_READ_PATHS = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib",
                      "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/usr/share/zoneinfo",
                      "/etc/localtime")


def _implicit_read_paths() -> list[str]:
    """What the interpreter itself needs to go on: its prefixes, this package, the runtime, its own /proc entry."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.exec_prefix),
             os.path.dirname(os.path.abspath(__file__)), *RUNTIME_READ_PATHS, f"/proc/{os.getpid()}"]
    return list(dict.fromkeys(os.path.realpath(p) for p in paths))


def _apply_landlock(spec: dict[str, Any], report: _Report, threads: int) -> int:
    fs = ("filesystem_write", "filesystem_read")
    unsupported = landlock.unsupported_reason()
    if unsupported:
        for protection in (*fs, "network"):
            report.miss(protection, unsupported)
        return 0
    abi = landlock.abi_version()
    if abi < 1:
        reason = ("Landlock is not available: kernel ABI 0 (needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK "
                  f"and landlock in the lsm= boot list; this is Linux {os.uname().release})")
        for protection in (*fs, "network"):
            report.miss(protection, reason)
        return abi
    if threads > 1:
        reason = (f"the process already had {threads} threads when confined; Landlock binds only the calling "
                  "thread (confine before starting any)")
        for protection in (*fs, "network"):
            report.miss(protection, reason)
        return abi
    all_fs = landlock.fs_rights(abi)
    try:
        ruleset = landlock.Ruleset(abi, handled_fs=all_fs, handled_net=landlock.net_rights(abi),
                                   scoped=landlock.scopes(abi))
        try:
            for path in [*_implicit_read_paths(), *spec.get("read", [])]:
                ruleset.add_path(path, landlock.FS_READ_RIGHTS)
            for path in ("/dev/null", *spec.get("write", [])):
                ruleset.add_path(path, all_fs)
            if abi >= 4:
                for port in spec.get("connect_ports") or []:
                    ruleset.add_port(port, landlock.LANDLOCK_ACCESS_NET_CONNECT_TCP)
        except BaseException:
            ruleset.close()
            raise
        ruleset.restrict_self()
    except OSError as exc:
        for protection in (*fs, "network"):
            report.miss(protection, f"Landlock failed: {exc}")
        return abi
    report.ok("filesystem_write")
    report.ok("filesystem_read")
    report.extra.append("no_new_privs")
    if abi >= 4:
        report.ok("network")
    else:
        report.miss("network", f"TCP rules need Landlock ABI 4 (Linux 6.7+); this kernel has ABI {abi}")
    if abi >= 6:
        report.extra += ["signals_scoped", "abstract_unix_sockets_scoped"]
    return abi


# --- for the host -------------------------------------------------------------------------------------

_PIDS_HIERARCHIES = ("/sys/fs/cgroup", "/sys/fs/cgroup/pids")


def _v2_has_pids(root: str) -> bool:
    try:
        with open(os.path.join(root, "cgroup.subtree_control"), encoding="utf-8") as handle:
            return "pids" in handle.read().split()
    except OSError:
        return False


def _pids_hierarchy() -> str | None:
    """The first pids hierarchy a child cgroup with ``pids.max`` can be made in (v2, then v1)."""
    v2, v1 = _PIDS_HIERARCHIES
    if os.path.exists(os.path.join(v2, "cgroup.controllers")) and _v2_has_pids(v2):
        return v2
    if os.path.exists(os.path.join(v1, "cgroup.procs")) and os.access(v1, os.W_OK):
        return v1
    return None


def create_pids_cgroup(limit: int) -> str | None:
    """As root: a fresh pids cgroup with ``pids.max = limit``, for one child to join; None when not possible."""
    if not is_linux() or os.geteuid() != 0:
        return None
    root = _pids_hierarchy()
    if root is None:
        return None
    _remove_orphans(root)
    path = os.path.join(root, f"rlm-exec-{os.getpid()}-{os.urandom(6).hex()}")
    try:
        os.mkdir(path)
    except OSError:
        return None
    try:
        with open(os.path.join(path, "pids.max"), "w", encoding="utf-8") as handle:
            handle.write(str(int(limit)))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def _remove_orphans(root: str) -> None:
    """Remove the cgroups of host processes that died without removing theirs (killed, say): named
    ``rlm-exec-<host pid>-...``, they would otherwise stay in the hierarchy until reboot."""
    try:
        names = [n for n in os.listdir(root) if n.startswith("rlm-exec-")]
    except OSError:
        return
    for name in names:
        host = name.split("-")[2]
        if host.isdigit() and not os.path.exists(f"/proc/{host}"):
            remove_cgroup(os.path.join(root, name))


def remove_cgroup(path: str) -> None:
    """Kill what is left in the cgroup, then remove it; never raises."""
    import signal

    for _ in range(50):
        try:
            with open(os.path.join(path, "cgroup.procs"), encoding="utf-8") as handle:
                pids = [int(line) for line in handle if line.strip()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)  # the killed tasks leave the cgroup when they exit


def support_report() -> dict[str, Any]:
    """Which protections this machine can give a confined child, and why not, without confining anything."""
    report: dict[str, Any] = {"platform": sys.platform, "landlock_abi": 0, "root": False, "pids_cgroup": None,
                              "available": [], "unavailable": []}

    def unavailable(protection: str, reason: str) -> None:
        report["unavailable"].append({"protection": protection, "reason": reason})

    has_resource = resource is not None
    for protection in ("memory", "cpu_time", "file_size"):
        if has_resource:
            report["available"].append(protection)
        else:
            unavailable(protection, f"no rlimits on this platform ({sys.platform})")
    unsupported = landlock.unsupported_reason()
    if unsupported:
        for protection in ("filesystem_write", "filesystem_read", "network"):
            unavailable(protection, unsupported)
    else:
        abi = landlock.abi_version()
        report["landlock_abi"] = abi
        if abi < 1:
            for protection in ("filesystem_write", "filesystem_read", "network"):
                unavailable(protection, f"Landlock is not available: kernel ABI 0 (needs Linux 5.13+ with Landlock "
                                        f"enabled; this is Linux {os.uname().release})")
        else:
            report["available"] += ["filesystem_write", "filesystem_read"]
            if abi >= 4:
                report["available"].append("network")
            else:
                unavailable("network", f"TCP rules need Landlock ABI 4 (Linux 6.7+); this kernel has ABI {abi}")
    root = is_linux() and os.geteuid() == 0
    report["root"] = root
    if not has_resource:
        unavailable("processes", f"no rlimits on this platform ({sys.platform})")
    elif root:
        report["pids_cgroup"] = _pids_hierarchy()
        if report["pids_cgroup"]:
            report["available"].append("processes")
        else:
            unavailable("processes", "running as root, whom RLIMIT_NPROC exempts, and no writable pids cgroup "
                                     "hierarchy (cgroup v2 /sys/fs/cgroup with pids in cgroup.subtree_control, or "
                                     "v1 /sys/fs/cgroup/pids)")
    else:
        report["available"].append("processes")
    order = {name: i for i, name in enumerate(PROTECTIONS)}
    report["available"].sort(key=order.__getitem__)
    report["unavailable"].sort(key=lambda m: order[m["protection"]])
    return report
