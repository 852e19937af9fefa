"""The repository passes a team's secret scanning, and the suite scrubs every shape those scanners block.

``SCANNER_RULES`` are gitleaks' default rules for the credentials an RLM deployment holds, as gitleaks writes
them (word boundaries included); GitHub's push protection blocks the same shapes. Two promises follow: no file
this repository tracks holds such a string (a test that needs one builds it at run time: tests/secret_shapes.py),
and whatever the harness writes — cassettes, traces, reports — has each shape scrubbed (harness/recording/secret_patterns.py).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.recording.filters import could_scrub, scrub_text
from tests.secret_shapes import SHAPES

ROOT = Path(__file__).resolve().parent.parent
_END = r"(?:[\x60'\"\s;]|\\[nr]|$)"
SCANNER_RULES = {
    "gcp-api-key": re.compile(r"\b(AIza[\w-]{35})" + _END),
    "databricks-api-token": re.compile(r"\b(dapi[a-h0-9]{32}(?:-\d)?)" + _END),
    "github-pat": re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[0-9a-zA-Z]{36}\b"),
    "aws-access-token": re.compile(r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b"),
    "slack-bot-token": re.compile(r"xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*"),
    "private-key": re.compile(r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]*?KEY(?: BLOCK)?-----"),
}


def scanner_findings(text: str) -> list[str]:
    """The scanner rules ``text`` trips, by id."""
    return [rule for rule, pattern in SCANNER_RULES.items() if pattern.search(text)]


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_every_shape_is_one_the_scanners_block() -> None:
    """The builders make what the rules flag: otherwise the tests below would prove nothing."""
    assert set(SHAPES) == set(SCANNER_RULES)
    for rule, build in SHAPES.items():
        assert scanner_findings(f"value = '{build('x')}'\n") == [rule], rule


@pytest.mark.parametrize("rule", sorted(SHAPES))
def test_scrubbing_leaves_nothing_a_scanner_blocks(rule: str) -> None:
    value = SHAPES[rule]("incident")
    for text in (f"my key is {value} here", f'{{"note": "{value}"}}', f"{value}\n", f"prefix:{value};"):
        assert could_scrub(text), (rule, text)
        scrubbed = scrub_text(text)
        assert value not in scrubbed and scanner_findings(scrubbed) == [], (rule, scrubbed)


def test_no_tracked_file_holds_a_credential_shape() -> None:
    """A team that vendors or forks this suite keeps its secret scanning on: nothing committed here trips it."""
    found: list[str] = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            found += [f"{path.relative_to(ROOT)}:{number}: {rule}" for rule in scanner_findings(line + "\n")]
    assert not found, ("credential-shaped strings in tracked files (a scanner blocks the push); build the value at "
                       "run time with tests/secret_shapes.py instead:\n" + "\n".join(found))


def test_the_file_scan_finds_a_planted_credential(tmp_path: Path) -> None:
    """The scan above can fail: a file holding a key-shaped string is named with its line and rule."""
    planted = tmp_path / "leak.py"
    planted.write_text(f"ok = 1\nKEY = '{SHAPES['gcp-api-key']('leak')}'\n", encoding="utf-8")
    lines = planted.read_text(encoding="utf-8").splitlines()
    assert [n for n, line in enumerate(lines, start=1) if scanner_findings(line + "\n")] == [2]
