"""The syrupy extension that stores one JSON file per scenario under the repository's ``snapshots/``.

Where each target's snapshots live is harness/recording/layout.py's (one folder per pytest configuration, so
syrupy's unused-snapshot logic stays exact).

Serialisation is syrupy's own ``JSONSnapshotExtension`` (keys sorted, two-space indent); this class only
says *where* a snapshot lives and *what it is called*. The plugin passes both through stashes:
``SNAPSHOT_DIR`` on the config (the folder of this run) and ``SNAPSHOT_NAME`` on the item (the
scenario). ``--snapshot-update`` then writes and deletes in ``snapshots/`` as syrupy does in
``__snapshots__``; a missing snapshot fails the item with syrupy's "Snapshot '...' does not exist!".
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from syrupy.data import SnapshotCollections
from syrupy.extensions.json import JSONSnapshotExtension

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import SnapshotIndex

SNAPSHOTS_DIRNAME = "snapshots"
SNAPSHOT_DIR = pytest.StashKey[Path]()
"""On ``config.stash``: the folder this run's snapshots live in (see ``snapshot_dir``)."""
SNAPSHOT_NAME = pytest.StashKey[str]()
SNAPSHOT_FOLDER = pytest.StashKey[Path]()  # per item: the folder of the scenario's own target
"""On ``item.stash``: the snapshot's name, i.e. the scenario's; the file is ``<name>.json``."""


class ScenarioSnapshotExtension(JSONSnapshotExtension):
    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        stash = getattr(test_location.item, "stash", None)
        if stash is not None and SNAPSHOT_FOLDER in stash:
            return str(stash[SNAPSHOT_FOLDER])
        config = getattr(test_location.item, "config", None)
        if config is not None and SNAPSHOT_DIR in config.stash:
            return str(config.stash[SNAPSHOT_DIR])
        return str(Path(test_location.filepath).parent / SNAPSHOTS_DIRNAME)  # used outside the plugin

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        stash = getattr(test_location.item, "stash", None)
        if stash is None or SNAPSHOT_NAME not in stash:
            return super().get_snapshot_name(test_location=test_location, index=index)
        suffix = f"[{index}]" if isinstance(index, str) else f".{index}" if index else ""
        return f"{stash[SNAPSHOT_NAME]}{suffix}"

    def discover_snapshots(self, *, test_location: PyTestLocation,
                           ignore_extensions: list[str] | None = None) -> SnapshotCollections:
        # syrupy walks the folder recursively and treats every file in it as its own. Here the reference
        # folder holds other targets' folders and may hold a README: only our .json files directly inside
        # count, so a reference run never reports (or, on --snapshot-update, deletes) anything else.
        folder = Path(self.dirname(test_location=test_location))
        found = super().discover_snapshots(test_location=test_location, ignore_extensions=ignore_extensions)
        mine = SnapshotCollections()
        for collection in found:
            path = Path(collection.location)
            if path.parent == folder and self.is_snapshot_location(location=collection.location):
                mine.add(collection)
        return mine
