"""The Databricks backend is an extra: without databricks-sdk a local run works and --backend databricks says
which extra to install, instead of an ImportError from deep inside the backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.extras import require_databricks

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_SDK = "import sys; sys.modules['databricks'] = None; from harness.cli import main; sys.exit(main())"


def _cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_SDK, "run", "--scenario", "single_delegation",
                           "--reports-dir", str(tmp_path), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_a_local_run_needs_no_databricks_sdk(tmp_path: Path) -> None:
    done = _cli(tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_databricks_backend_names_the_extra_without_the_sdk(tmp_path: Path) -> None:
    done = _cli("--backend", "databricks", tmp_path=tmp_path)
    assert done.returncode == 2
    assert "pip install 'rlm-conformance[databricks]'" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_require_databricks_passes_when_installed_and_fails_when_not(monkeypatch: pytest.MonkeyPatch) -> None:
    require_databricks("--backend databricks")  # the dev environment has the extra
    monkeypatch.setitem(sys.modules, "databricks", None)
    monkeypatch.setitem(sys.modules, "databricks.sdk", None)  # as if never installed, even after an import
    with pytest.raises(ConfigError, match=r"rlm-conformance\[databricks\]"):
        require_databricks("--backend databricks")
