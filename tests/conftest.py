"""Every test's ``rlm-conformance run`` (``main([...])`` in-process) runs its scenarios in-process, as before
``-j`` existed: many tests monkeypatch the harness, which a worker process would not see. The tests of ``-j``
itself (tests/harness/test_parallel_run.py) pass ``-j`` explicitly."""

import os

import pytest

os.environ.setdefault("RLM_CONFORMANCE_JOBS", "1")


def pytest_collection_modifyitems(config, items) -> None:
    """``line_independent`` is a mark of whole modules (tox.ini runs them once, tests/line_guard collects them by
    their module-level ``pytestmark``): on a single test it would be deselected everywhere and run nowhere."""
    import functools
    from pathlib import Path

    import pytest

    from tests.line_guard import is_marked

    marked = functools.cache(is_marked)
    stray = [i.nodeid for i in items if i.get_closest_marker("line_independent") and not marked(Path(i.path))]
    if stray:
        raise pytest.UsageError("line_independent marks a whole module (pytestmark = pytest.mark.line_independent "
                                "at its top level), not single tests: " + ", ".join(stray))
    # Modules holding a slow test run first, each whole: under xdist the longest tests then start early instead of
    # leaving one worker busy alone at the end, and a module's fixtures are still set up once.
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)


@pytest.fixture
def temp_leftovers(tmp_path, monkeypatch):
    """Point every temporary folder of a test's run at an empty one (this process's, which the parent of ``-j``
    workers makes theirs in, and the spawned workers' own, which read ``TMPDIR`` afresh); return a function naming
    what is left in it. The parent's trace spool goes when the report holding it is collected: collected first."""
    import gc
    import tempfile

    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))

    def leftovers() -> list[str]:
        gc.collect()
        return sorted(p.name for p in folder.iterdir())

    return leftovers
