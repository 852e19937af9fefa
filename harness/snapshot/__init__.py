"""Snapshots of a run: ``normalize`` (the one table of volatile values) and ``extension`` (where syrupy
stores them: ``snapshots/``). Import from the submodules; this package imports nothing heavy."""
