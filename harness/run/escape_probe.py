"""Escape targets outside the executor, watched from outside while an escape-probe scenario runs.

The executed code is model-written; an executor that confines it stops it at its own folders, the LM bridge
and its limits. An escape-probe scenario (``escape_probe: true``; ``scenarios/executor_escape_probe.yaml``)
runs code that tries to get out, and ``executor_confined`` judges every attempt. The code's own report could
lie or be cut short, so the harness also plants what the code goes for and watches it itself:

* a folder outside every executor folder, ``/tmp/rlm-conformance-escape-<uid>/``, holding a secret file (to
  read) and the place a write lands (``escaped-write.txt``);
* a TCP listener on 127.0.0.1:``ESCAPE_PORT`` that is not the LM bridge, counting the connections it accepts.

Both are fixed, not per run, because the probe's code is fixed (a cassette replays it word for word). So two
escape-probe scenarios of one user (``run -j 2``, two xdist workers, two checkouts) must not watch at the same
time, or one's unconfined write or connection is counted as the other's escape: the watch holds an exclusive
lock on ``/tmp/rlm-conformance-escape-<uid>.lock`` (``flock``: released if the process dies), and the other
waits for it. Wherever Job_B runs on this machine: the local backend, and the databricks backend's workspace
fake (whose Job_B child confines itself as on a cluster); not a replayed workspace (nothing runs) nor a real one
(its compute is another machine).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..trace.model import EscapeProbeRecord

ESCAPE_PORT = 47913
"""The listener's port; the probe's code connects to it (scenarios/executor_escape_probe.yaml)."""
SECRET = "rlm-conformance-escape-secret: a file outside every folder the executed code may read"
SECRET_FILE = "secret.txt"
WRITTEN_FILE = "escaped-write.txt"


def escape_folder() -> Path:
    """``/tmp/rlm-conformance-escape-<uid>``: fixed, because the probe's recorded code names it."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path("/tmp") / f"rlm-conformance-escape-{uid}"


class _Listener:
    """Accepts and counts connections on 127.0.0.1:port on a thread until stopped."""

    def __init__(self, port: int) -> None:
        self.connections = 0
        self.error: str | None = None
        self._sock: socket.socket | None = None
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
            sock.settimeout(0.1)
            self._sock = sock
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="rlm-escape-listener", daemon=True)
        self._thread.start()

    @property
    def listening(self) -> bool:
        return self._sock is not None

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def stop(self) -> None:
        if self._sock is None:
            return
        self._stop.set()
        self._thread.join(2.0)
        self._sock.close()


def _plant_secret(folder: Path) -> None:
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / SECRET_FILE
    if target.is_file() and target.read_text(encoding="utf-8", errors="replace") == SECRET:
        return
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".secret-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(SECRET)
    os.replace(tmp, target)


@contextlib.contextmanager
def escape_targets(enabled: bool) -> Iterator[EscapeProbeRecord | None]:
    """Plant and watch the escape targets while the scenario runs (None when ``enabled`` is false)."""
    if not enabled:
        yield None
        return
    folder = escape_folder()
    with _exclusive_watch(folder), _watched(folder) as record:
        yield record


@contextlib.contextmanager
def _exclusive_watch(folder: Path) -> Iterator[None]:
    """One watch of ``folder`` at a time for this user, across processes and threads (see the module docstring)."""
    fd = os.open(folder.with_name(folder.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _watched(folder: Path) -> Iterator[EscapeProbeRecord]:
    _plant_secret(folder)
    written = folder / WRITTEN_FILE
    written.unlink(missing_ok=True)  # left by an earlier unconfined run: only this run's write counts
    listener = _Listener(ESCAPE_PORT)
    record = EscapeProbeRecord(folder=str(folder), secret=SECRET, port=ESCAPE_PORT, listening=listener.listening,
                               listen_error=listener.error)
    try:
        yield record
    finally:
        listener.stop()
        record.connections = listener.connections
        if written.exists():
            record.written = [str(written)]
            written.unlink(missing_ok=True)
