"""``explore`` from a plain ``pip install rlm-conformance`` (issue 51): Hypothesis, which it generates with, is a
runtime dependency; an environment that lacks it anyway gets one line naming what to install, exit 2 (1 is
``--fail-on-find``'s "found something"), never a traceback."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_hypothesis_is_installed_by_a_plain_install() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "hypothesis" in _names(project["dependencies"])


def test_without_hypothesis_explore_names_what_to_install_and_exits_2(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for name in [n for n in sys.modules if n == "hypothesis" or n.startswith("hypothesis.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # what `import hypothesis` meets when it is not installed
    code = main(["explore", "--no-progress", "--no-database", "--max-examples", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "pip install" in err and "hypothesis" in err
