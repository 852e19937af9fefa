"""Supervising Job_B as a process: capped pipe capture and killing what analyst code started. Stdlib only.

Here, inside the executor package, because Job_B's supervisor on Databricks
(``supervisor.py``, shipped in the payload wheel) needs the same helpers as the
local job runners (``reference_agent.backends.process`` re-exports them).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import IO


class CappedBuffer:
    """Head of a pipe up to ``cap`` bytes plus a byte count; survives a cancelled drain."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self.head = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.feed(chunk)

    def text(self) -> str:
        return bytes(self.head).decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head)


class PipeTap:
    """Drains a pipe on a thread into ``sink``, which the owner may swap (a warm worker: one per block)."""

    def __init__(self, stream: IO[bytes], cap: int = 0, name: str | None = None) -> None:
        self.sink = CappedBuffer(cap)
        self._stream = stream
        self._thread = threading.Thread(target=self._drain, name=name, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := self._stream.read1(65536):  # type: ignore[attr-defined]
                self.sink.feed(chunk)
        except (OSError, ValueError):
            pass

    @property
    def draining(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (Job_B runs with ``start_new_session``)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def proc_stat(pid: int) -> list[bytes] | None:
    """``/proc/<pid>/stat`` from its third field (state, ppid, pgrp, ...) on; None if the process is gone.

    "pid (comm) state ...": comm may hold spaces and parentheses, so the split is after the last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()


def kill_group_except(pgid: int, keep: int) -> list[int]:
    """SIGKILL every process in group ``pgid`` but ``keep`` (Linux: read from /proc); returns the pids killed.

    A one-shot run kills its whole group when the block ends; a warm worker must
    outlive its blocks, so the processes its code started are picked out instead.
    """
    killed = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == keep:
            continue
        fields = proc_stat(int(entry.name))
        # Zombies (state Z) are dead already; their parent reaps them.
        if fields is not None and len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                pass
    return killed
