"""Capped capture of what executed code writes to ``sys.stdout``/``sys.stderr``.

The head of each stream is kept up to a byte cap and the rest only counted, so
10 MB of prints cost a counter, not memory. Text and ``sys.stdout.buffer``
writes share one byte sink (``write_through``) and so keep their order.
"""

from __future__ import annotations

import io


class CappedSink(io.RawIOBase):
    """A write-only byte sink that keeps the first ``cap`` bytes and counts all of them."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = max(0, cap)
        self.total = 0
        self._head = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        size = view.nbytes
        room = self.cap - len(self._head)
        if room > 0:
            self._head += view[:room]
        self.total += size
        return size

    @property
    def truncated(self) -> bool:
        return self.total > len(self._head)

    def text(self) -> str:
        # errors="replace": non-UTF-8 bytes or a multibyte char cut at the cap never crash.
        return bytes(self._head).decode("utf-8", errors="replace")


class CappedStream(io.TextIOWrapper):
    """A text stream for ``sys.stdout``/``sys.stderr`` with a ``.buffer`` like the real ones."""

    def __init__(self, cap: int) -> None:
        self.sink = CappedSink(cap)
        super().__init__(
            io.BufferedWriter(self.sink, buffer_size=8192),
            encoding="utf-8",
            # Lone surrogates in str data are escaped, never raised into user code.
            errors="backslashreplace",
            write_through=True,
        )

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        # User code closing sys.stdout must not lose what was captured; just flush.
        try:
            self.flush()
        except ValueError:
            pass

    def snapshot(self) -> tuple[str, int, bool]:
        """(kept text, total bytes written, truncated) after flushing pending bytes."""
        try:
            self.flush()
        except (ValueError, OSError):
            pass
        return self.sink.text(), self.sink.total, self.sink.truncated
