"""Where re-recorded cassettes wait for review, and how they are accepted.

A re-recording goes into a sibling of the cassette folder, ``<cassettes>.new/``, laid out as the folder itself
(harness/recording/layout.py: ``cassettes.new/<target>/<scenario>.yaml`` ...): the recorder needs no other name,
``run --cassette-dir cassettes.new`` replays it as it is, and accepting is a rename within one file system. A
scenario recorded for the first time has no old cassette to review: its recording moves into place at once, as
before.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import HarnessError

SUFFIX = ".new"


def pending_root(cassette_root: Path) -> Path:
    """``cassettes`` -> ``cassettes.new``: the folder re-recordings of ``cassette_root`` wait in."""
    absolute = Path(os.path.abspath(cassette_root))
    return cassette_root.parent / (absolute.name + SUFFIX)


def move_into_place(new: Path, old: Path, *, root: Path) -> None:
    """``new`` replaces ``old`` in one rename (``os.replace``: atomic on one file system); empty folders left in the
    pending tree ``root`` go. An error names both files and leaves both as they were."""
    try:
        old.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new, old)
    except OSError as exc:
        raise HarnessError(f"cannot move {new} to {old} ({exc.strerror or exc}); both are unchanged. Fix: make "
                           f"{old.parent} writable, or move the file by hand.") from None
    _prune(new.parent, root)


def discard(new: Path, *, root: Path) -> None:
    """Drop a re-recording that changed nothing (and the pending folders it leaves empty)."""
    new.unlink(missing_ok=True)
    _prune(new.parent, root)


def _prune(folder: Path, root: Path) -> None:
    """Remove ``folder`` and its parents up to ``root`` (included) while they are empty."""
    root = Path(os.path.abspath(root))
    folder = Path(os.path.abspath(folder))
    while folder.is_relative_to(root) and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        if folder == root:
            break
        folder = folder.parent
