"""A small ctypes binding of Linux Landlock (``include/uapi/linux/landlock.h``, Documentation/userspace-api/landlock.rst).

Stdlib only (Job_B ships without dependencies). Landlock lets an unprivileged process deny
itself filesystem and TCP access, for itself and every process it starts; nothing here needs
root or a daemon. Best effort as the kernel docs recommend: only the access rights the
running kernel's ABI knows are handled, and the caller reports what the ABI lacks.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys

# Syscall numbers. Since Linux 5.1 (io_uring, 424+) every architecture but alpha takes new
# syscalls at the same number from the generic table (include/uapi/asm-generic/unistd.h;
# arch/x86/entry/syscalls/syscall_64.tbl lists 444-446 too), so x86_64 and aarch64 agree.
SYS_landlock_create_ruleset = 444
SYS_landlock_add_rule = 445
SYS_landlock_restrict_self = 446

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2  # ABI 4

LANDLOCK_ACCESS_FS_EXECUTE = 1 << 0
LANDLOCK_ACCESS_FS_WRITE_FILE = 1 << 1
LANDLOCK_ACCESS_FS_READ_FILE = 1 << 2
LANDLOCK_ACCESS_FS_READ_DIR = 1 << 3
LANDLOCK_ACCESS_FS_REMOVE_DIR = 1 << 4
LANDLOCK_ACCESS_FS_REMOVE_FILE = 1 << 5
LANDLOCK_ACCESS_FS_MAKE_CHAR = 1 << 6
LANDLOCK_ACCESS_FS_MAKE_DIR = 1 << 7
LANDLOCK_ACCESS_FS_MAKE_REG = 1 << 8
LANDLOCK_ACCESS_FS_MAKE_SOCK = 1 << 9
LANDLOCK_ACCESS_FS_MAKE_FIFO = 1 << 10
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
LANDLOCK_ACCESS_FS_MAKE_SYM = 1 << 12
LANDLOCK_ACCESS_FS_REFER = 1 << 13  # ABI 2
LANDLOCK_ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
LANDLOCK_ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5

LANDLOCK_ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
LANDLOCK_ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4

LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
LANDLOCK_SCOPE_SIGNAL = 1 << 1  # ABI 6

PR_SET_NO_NEW_PRIVS = 38

_FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM

# Rights that make sense on a file (the rest are about a directory's entries): the kernel
# refuses the others on a non-directory with EINVAL.
FS_FILE_RIGHTS = (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE
                  | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
FS_READ_RIGHTS = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR


class LandlockError(OSError):
    """A Landlock syscall failed; ``errno`` says why."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)): 12 bytes, not 16
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


assert ctypes.sizeof(_RulesetAttr) == 24 and ctypes.sizeof(_PathBeneathAttr) == 12 and ctypes.sizeof(_NetPortAttr) == 16


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows (the set a ruleset handles)."""
    if abi < 1:
        return 0
    rights = _FS_ABI1
    if abi >= 2:
        rights |= LANDLOCK_ACCESS_FS_REFER
    if abi >= 3:
        rights |= LANDLOCK_ACCESS_FS_TRUNCATE
    if abi >= 5:
        rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV
    return rights


def net_rights(abi: int) -> int:
    return LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP if abi >= 4 else 0


def scopes(abi: int) -> int:
    return LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0


def _attr_size(abi: int) -> int:
    """``sizeof(struct landlock_ruleset_attr)`` as the ABI knows it (older kernels reject a larger one)."""
    return 24 if abi >= 6 else 16 if abi >= 4 else 8


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _syscall(number: int, *args: int) -> int:
    # Every argument as a long: syscall(2) is variadic and reads each one as a long.
    result = libc().syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"syscall {number}: {os.strerror(err)}")
    return result


def unsupported_reason() -> str | None:
    """Why this platform cannot have Landlock at all, or None."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform}): Landlock is Linux's"
    if os.uname().machine.lower().startswith("alpha"):
        return "Linux on alpha numbers its syscalls differently; this binding knows the generic table only"
    return None


def abi_version() -> int:
    """The kernel's Landlock ABI (1 = Linux 5.13 ...); 0 when Landlock is missing or disabled at boot."""
    if unsupported_reason() is not None:
        return 0
    try:
        return _syscall(SYS_landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION)
    except LandlockError as exc:  # ENOSYS: kernel without it; EOPNOTSUPP: built but not enabled (lsm=)
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0
        raise


def set_no_new_privs() -> None:
    """Required before ``landlock_restrict_self`` without CAP_SYS_ADMIN; also stops setuid gains on exec."""
    if libc().prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                    ctypes.c_ulong(0)) != 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


class Ruleset:
    """One ruleset: ``add_path``/``add_port`` rules, then ``restrict_self`` (closes it)."""

    def __init__(self, abi: int, *, handled_fs: int, handled_net: int = 0, scoped: int = 0):
        if abi < 1:
            raise LandlockError(errno.EOPNOTSUPP, "Landlock is not available")
        self.abi = abi
        self.handled_fs = handled_fs & fs_rights(abi)
        self.handled_net = handled_net & net_rights(abi)
        self.scoped = scoped & scopes(abi)
        attr = _RulesetAttr(self.handled_fs, self.handled_net, self.scoped)
        self.fd = _syscall(SYS_landlock_create_ruleset, ctypes.addressof(attr), _attr_size(abi), 0)

    def add_path(self, path: str, access: int) -> bool:
        """Allow ``access`` beneath ``path``; False (no rule) when the path does not exist or this
        process cannot reach it anyway (a directory on the way it may not search).

        On a non-directory only the file rights apply (the kernel refuses directory rights there).
        """
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return False
        try:
            access &= self.handled_fs
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                access &= FS_FILE_RIGHTS
            if not access:
                return False
            rule = _PathBeneathAttr(access, fd)
            _syscall(SYS_landlock_add_rule, self.fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.addressof(rule), 0)
            return True
        finally:
            os.close(fd)

    def add_port(self, port: int, access: int) -> None:
        rule = _NetPortAttr(access & self.handled_net, port)
        _syscall(SYS_landlock_add_rule, self.fd, LANDLOCK_RULE_NET_PORT, ctypes.addressof(rule), 0)

    def restrict_self(self) -> None:
        """Enforce on the calling thread and what it starts from now on (threads, processes), for good.

        Threads that already run are NOT restricted: call this while the process has one thread.
        """
        try:
            set_no_new_privs()
            _syscall(SYS_landlock_restrict_self, self.fd, 0)
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
