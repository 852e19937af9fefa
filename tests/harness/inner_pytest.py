"""A pytest project folder for the tests of the pytest plugin, run by ``pytest.main`` inside the test's process.

A fresh ``pytest`` subprocess per run costs an interpreter, the imports of google.adk and google-genai (~2.5 s)
and the session-service probe of the first scenario (~2.3 s); the plugin's tests make ~40 runs. In-process,
the plugin is still loaded from its entry point, with a ``Config``, syrupy session and ``ConformanceSession``
of the run's own; what the process already imported (ADK, the harness) is shared.

Not pytester: its fixture and its ``runpytest_inprocess`` drop every module imported since they began, native
extensions included, and DuckDB's cannot be initialised twice in a process (the next import aborts the
interpreter); everything else would be imported again for each run. Here only the project's own modules (files
under its folder) are dropped after a run, and an outer module with one of their names (this repository's
``test_conformance``, say) is set aside during the run and put back after. ``sys.path`` is restored (not
``sys.meta_path``: pytest removes its own hook, and a finder a newly imported library installs must stay —
importlib_metadata, on the ADK 1.x line, replaces the standard one), and each run gets its own ``--basetemp`` (pytest prunes old temporary roots, the outer run's
among them). The environment is pytester's: no ``PYTEST_ADDOPTS``, no xdist worker variables, ``HOME`` in
the test's temporary folder, no colours.

``run_in_subprocess`` starts ``python -m pytest`` instead, for runs that start xdist workers anyway.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


IN_PROCESS = ("-p", "no:unraisableexception")
"""At its end that plugin collects garbage five times over the whole process (~0.5 s in a worker late in the
suite, for every run); an in-process run's unraisable exceptions would be the outer run's business anyway."""


class InnerProject:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._runs = 0

    @classmethod
    def create(cls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
        path = tmp_path / "project"
        path.mkdir()
        for name in ("PYTEST_ADDOPTS", "TOX_ENV_DIR", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                     "PYTEST_XDIST_TESTRUNUID"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.setenv("PY_COLORS", "0")
        monkeypatch.chdir(path)
        monkeypatch.syspath_prepend(str(path))  # the project's modules importable, as in a subprocess (-p NAME)
        return cls(path)

    def mkdir(self, name: str) -> Path:
        (self.path / name).mkdir(parents=True)
        return self.path / name

    def write(self, name: str, text: str) -> Path:
        (self.path / name).parent.mkdir(parents=True, exist_ok=True)
        (self.path / name).write_text(text, encoding="utf-8")
        return self.path / name

    def run(self, *args: str) -> pytest.RunResult:
        """``pytest ARGS`` in the project folder, in this process."""
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        with project_modules(self.path), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            ret = pytest.main(["-p", "no:cacheprovider", *IN_PROCESS, f"--basetemp={self._basetemp()}", *args])
        return pytest.RunResult(ret, out.getvalue().splitlines(), err.getvalue().splitlines(),
                                time.monotonic() - started)

    def run_in_subprocess(self, *args: str, timeout: float = 300) -> pytest.RunResult:
        """``python -m pytest ARGS`` in the project folder, as a user starts it."""
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               f"--basetemp={self._basetemp()}", *args], cwd=self.path, env=dict(os.environ),
                              capture_output=True, text=True, timeout=timeout)
        return pytest.RunResult(done.returncode, done.stdout.splitlines(), done.stderr.splitlines(),
                                time.monotonic() - started)

    def _basetemp(self) -> Path:
        self._runs += 1
        return self.path.parent / f"basetemp-{self._runs}"


@contextlib.contextmanager
def project_modules(folder: Path) -> Iterator[None]:
    folder = folder.resolve()
    # The top-level names a run may import from the project: its modules and packages at any depth (pytest's
    # default import mode puts each test folder without __init__.py on sys.path).
    names = {p.stem if p.name != "__init__.py" else p.parent.name for p in folder.rglob("*.py")}
    set_aside = {name: sys.modules.pop(name) for name in list(sys.modules)
                 if name.split(".")[0] in names and not _inside(sys.modules[name], folder)}
    path = list(sys.path)
    try:
        yield
    finally:
        for name in [n for n, module in list(sys.modules.items()) if _inside(module, folder)]:
            del sys.modules[name]
        sys.modules.update(set_aside)
        sys.path[:] = path


def _inside(module: object, folder: Path) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and Path(file).resolve().is_relative_to(folder)
