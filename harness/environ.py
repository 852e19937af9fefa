"""Environment variables set for the duration of a run, and put back exactly as they were (unset stays unset)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping


@contextlib.contextmanager
def patched_environ(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set each variable (None: unset it) until the block ends."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
