"""``seal_process``: once Job_B's supervisor is non-dumpable, a process of the same user without CAP_SYS_PTRACE
(the analyst's code) cannot read its ``/proc/<pid>/environ``, which still shows the key the supervisor was started
with. Shown both ways: unsealed, the same reader gets it.

Both processes run as an ordinary user does: as root they first give up every capability (a root reader without
capabilities is refused a root holder's ``/proc`` entries whatever the seal, since its capabilities are not a
superset of the holder's; the seal is what protects a supervisor of an ordinary user, e.g. on standard access
mode compute)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")

SECRET = "rlm-sealed-supervisor-secret"

_NO_CAPABILITIES = """
import ctypes, os
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
if os.geteuid() == 0:  # capset with every set empty, as confine.py leaves a process that runs as root
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.capset(ctypes.byref(Header(0x20080522, 0)), ctypes.byref((Data * 2)())) == 0
"""

_HOLDER = _NO_CAPABILITIES + """
import sys, time
from reference_agent.executor.credential import seal_process
if sys.argv[1] == "seal":
    problem = seal_process()
    assert problem is None, problem
print("ready", flush=True)
time.sleep(30)
"""

# The reader as the analyst's code is: same user, no capabilities. It prints what it read of the holder's environment.
_READER = _NO_CAPABILITIES + """
import sys
try:
    with open("/proc/%s/environ" % sys.argv[1], "rb") as handle:
        print("read", handle.read().decode("utf-8", "replace"))
except OSError as exc:
    print("blocked", exc.errno)
"""


def _read_environ_of_holder(mode: str) -> str:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, mode], stdout=subprocess.PIPE, text=True,
                              env={"PATH": "/usr/bin:/bin", "GOOGLE_API_KEY": SECRET,
                                   "PYTHONPATH": ":".join(sys.path)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        time.sleep(0.05)
        done = subprocess.run([sys.executable, "-c", _READER, str(holder.pid)], capture_output=True, text=True,
                              timeout=30, check=True)
        return done.stdout
    finally:
        holder.kill()
        holder.wait()


def test_an_unsealed_supervisors_environment_is_readable_by_the_same_user() -> None:
    assert SECRET in _read_environ_of_holder("open")  # what the seal is for: /proc keeps the starting environment


def test_a_sealed_supervisors_environment_is_not() -> None:
    seen = _read_environ_of_holder("seal")
    assert SECRET not in seen and seen.startswith("blocked 13"), seen
