"""A divergence the backend declares is a strict expected failure, as pytest's xfail(strict=True): shown with its
reason and exit 0 while it fails; XPASS and exit 1 once it passes (the declaration is stale). So
`rlm-conformance run --backend databricks` is green with whatever it declares (nothing today: these tests
declare a scenario themselves, and make it fail with a snapshot that is not its own)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import EXIT_FAILED, EXIT_OK, main
from harness.report.json_report import load_report_json
from reference_agent.conformance import databricks

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *scenarios: str, snapshots: Path = ROOT / "snapshots") -> int:
    return main(["run", "--backend", "databricks", "--no-progress", "--scenarios-dir", str(ROOT / "scenarios"),
                 "--cassette-dir", str(ROOT / "cassettes"), "--snapshot-dir", str(snapshots),
                 "--reports-dir", str(tmp_path), *[w for s in scenarios for w in ("--scenario", s)]])


def _snapshots_with_a_wrong_one(tmp_path: Path, wrong: str, *right: str) -> Path:
    """A snapshot folder where ``wrong``'s snapshot claims one event more than the scenario makes."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    for name in right:
        (folder / f"{name}.json").write_bytes((ROOT / "snapshots" / f"{name}.json").read_bytes())
    snapshot = json.loads((ROOT / "snapshots" / f"{wrong}.json").read_text(encoding="utf-8"))
    snapshot["events"].append(dict(snapshot["events"][-1], index=len(snapshot["events"])))
    (folder / f"{wrong}.json").write_text(json.dumps(snapshot, indent=2), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def test_a_declared_divergence_that_fails_is_green_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(databricks.DIVERGENCES, "exit_loop", "declared for this test")
    snapshots = _snapshots_with_a_wrong_one(tmp_path, "exit_loop", "max_iterations")
    assert _run(tmp_path / "reports", "exit_loop", "max_iterations", snapshots=snapshots) == EXIT_OK
    out = capsys.readouterr().out
    assert "xfail exit_loop" in out and "failed as declared (databricks backend: declared for this test)" in out
    assert "1 scenario failed as declared (xfail)" in " ".join(out.split())
    tmp_path = tmp_path / "reports"
    skipped = ET.parse(tmp_path / "conformance.xml").getroot().find(".//testcase[@name='exit_loop::"
                                                                     "declared']/skipped")
    assert skipped is not None and skipped.get("type") == "pytest.xfail"
    report = load_report_json(tmp_path / "conformance.json")
    [declared] = [r for r in report.results if r.declared]
    assert declared.status == "xfail" and declared.verdict == "fail" and report.ok
    assert "## Declared divergences" in (tmp_path / "conformance.md").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "conformance.json").read_text())["results"][0]["status"] in ("xfail", "pass")


def test_a_declared_divergence_that_passes_is_red(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(databricks.DIVERGENCES, "exit_loop", "declared for this test")
    assert _run(tmp_path, "exit_loop") == EXIT_FAILED
    out = " ".join(capsys.readouterr().out.split())
    assert "XPASS exit_loop: passed, but it is declared to fail (databricks backend: declared for this test)" in out
    failure = ET.parse(tmp_path / "conformance.xml").getroot().find(".//testcase[@name='exit_loop::declared']/failure")
    assert failure is not None and failure.get("type") == "XPASS(strict)"


def test_nothing_is_declared_on_the_local_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--no-progress", "--scenarios-dir", str(ROOT / "scenarios"), "--cassette-dir",
                 str(ROOT / "cassettes"), "--snapshot-dir", str(ROOT / "snapshots"), "--reports-dir", str(tmp_path),
                 "--scenario", "executor_environment"]) == EXIT_OK
    assert "xfail" not in capsys.readouterr().out
