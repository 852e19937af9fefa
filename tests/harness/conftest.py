"""Fixtures the harness's CLI tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli_project import SCENARIO


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "cli_smoke.yaml").write_text(SCENARIO, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    return tmp_path
