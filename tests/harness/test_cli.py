"""The rlm-conformance CLI: list, explain, run (missing cassette, bad target), record + replay, report re-render.

Runs ``main(argv)`` in-process inside a temporary folder, so the default
``scenarios/``, ``cassettes/`` and ``reports/`` are the test's own. Real runs use
the scripted endpoint on 127.0.0.1 (record) and replay: no network.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.checks import ALL_CHECK_NAMES
from harness.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from tests.harness.cli_project import SCENARIO





def _one_paragraph(text: str) -> None:
    assert text.strip(), "expected a message"
    assert "Traceback" not in text
    assert "\n\n" not in text.strip()


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    for command in ("run", "record", "list", "report", "explain"):
        assert command in out


def test_list_shows_names_descriptions_and_tags(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "cli_smoke" in out and "One delegation" in out and "smoke, cli" in out


def test_list_shows_brackets_as_written(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """explore writes descriptions like 'sessions [user_1x1]': rich took the brackets for markup and dropped them."""
    found = SCENARIO.replace("name: cli_smoke", "name: found_one").replace(
        "description: One delegation, executed, summarised, then the analyst exits the loop.",
        "description: 'Found by explore: sessions [user_1x1], steps [delegate:final].'")
    (workdir / "scenarios" / "found_one.yaml").write_text(found, encoding="utf-8")
    assert main(["list"]) == EXIT_OK
    assert "sessions [user_1x1], steps [delegate:final]." in capsys.readouterr().out


def test_explain_a_known_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "summary_persisted"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("summary_persisted: Durable handoff")
    assert "Definition of Done: 000:" in out


def test_explain_an_unknown_check_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "no_such_check"]) == EXIT_USAGE
    err = capsys.readouterr().err
    _one_paragraph(err)
    assert "unknown check 'no_such_check'" in err and "summary_persisted" in err and "stage_gating" in err


def test_run_with_a_missing_cassette_fails_the_scenario_and_names_the_fix(
        workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A missing cassette fails the scenario's cassette row (exit 1, a JUnit <failure>), and the other checks
    # still judge it, on a re-run against the scenario's scripted model.
    assert main(["run", "--no-progress"]) == EXIT_FAILED
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert f"cassette {Path('cassettes') / 'cli_smoke.yaml'} does not exist" in flat
    assert "rlm-conformance record --scenario cli_smoke" in flat
    assert out.rstrip().splitlines()[-1].startswith("Reports written to reports")
    suite = ET.parse(workdir / "reports" / "conformance.xml").getroot().find("testsuite")
    assert suite.find("testcase[@name='cli_smoke::cassette']/failure") is not None
    judged = suite.find("testcase[@name='cli_smoke::summary_persisted']")
    assert judged is not None and judged.find("failure") is None


def test_run_with_an_unimportable_target_is_a_usage_error(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", "nosuch.module:x", "--llm-mode", "scripted"]) == EXIT_USAGE
    captured = capsys.readouterr()
    _one_paragraph(captured.err)
    assert "nosuch.module:x" in captured.err and "No module named 'nosuch'" in captured.err
    assert not (workdir / "reports").exists()


@pytest.mark.parametrize("argv, fragment", [
    (["run", "--scenario", "nope"], "--scenario nope: no such scenario"),
    (["run", "-k", "zzz"], "no scenario matching -k 'zzz'"),
    (["run", "--format", "junit,pdf"], "unknown report format(s) 'pdf'"),
    (["run", "--scenarios-dir", "missing"], "is not a directory"),
    (["run", "--session-service", "bogus"], "--session-service 'bogus' is unknown"),
    (["report", "--from", "missing.json"], "no such report file"),
])
def test_user_errors_exit_2_with_one_paragraph(workdir: Path, capsys: pytest.CaptureFixture[str],
                                               argv: list[str], fragment: str) -> None:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    _one_paragraph(err)
    assert fragment in err


def test_a_broken_scenario_file_is_a_usage_error(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "scenarios" / "bad.yaml").write_text("name: bad\ndescription: [unclosed\n", encoding="utf-8")
    assert main(["list"]) == EXIT_USAGE
    err = capsys.readouterr().err
    _one_paragraph(err)
    assert "bad.yaml:" in err


@pytest.mark.slow
def test_record_then_replay_then_rerender(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--scenario", "cli_smoke", "--no-progress"]) == EXIT_OK
    out = capsys.readouterr().out
    cassette = Path("cassettes") / "cli_smoke.yaml"
    assert f"cassette written: {cassette}" in out and (workdir / cassette).is_file()

    # `run` compares snapshots as pytest does: a missing one fails until it is created with --snapshot-update.
    assert main(["run", "--no-progress"]) == EXIT_FAILED
    assert "Snapshot snapshots/cli_smoke.json does not exist" in " ".join(capsys.readouterr().out.split())
    assert main(["run", "--no-progress", "--snapshot-update"]) == EXIT_OK
    assert (workdir / "snapshots" / "cli_smoke.json").is_file()
    capsys.readouterr()
    assert main(["run", "--no-progress"]) == EXIT_OK
    out = capsys.readouterr().out
    # every check, plus the cassette and snapshot verdicts
    assert f"1 scenario, {len(ALL_CHECK_NAMES) + 2} checks:" in out and "0 failed" in out
    assert out.rstrip().splitlines()[-1] == ("Reports written to reports/: conformance.xml, conformance.md, "
                                             "conformance.html, conformance.json")
    reports = workdir / "reports"
    original = {name: (reports / name).read_bytes() for name in ("conformance.xml", "conformance.md",
                                                                  "conformance.html")}
    for name in original:
        (reports / name).unlink()

    assert main(["report", "--from", "reports/conformance.json"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Reports written to reports/: conformance.xml, conformance.md, conformance.html" in out
    assert {name: (reports / name).read_bytes() for name in original} == original


@pytest.mark.slow
def test_record_takes_the_snapshot_options_of_run(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One ``record --snapshot-update`` writes the cassette and the snapshot, and says how to replay both."""
    assert main(["record", "--scenario", "cli_smoke", "--no-progress", "--snapshot-dir", "snaps",
                 "--snapshot-update"]) == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert (workdir / "snaps" / "cli_smoke.json").is_file() and not (workdir / "snapshots").exists()
    assert "Replay them with: rlm-conformance run --snapshot-dir snaps" in out
    assert main(["run", "--no-progress", "--snapshot-dir", "snaps"]) == EXIT_OK
    capsys.readouterr()
    assert main(["record", "--scenario", "cli_smoke", "--backend", "databricks", "--snapshot-update"]) == EXIT_USAGE
    assert "--snapshot-update with --backend databricks" in capsys.readouterr().err


def test_a_scenario_naming_an_unknown_check_is_a_usage_error(workdir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = workdir / "scenarios" / "cli_smoke.yaml"
    path.write_text(SCENARIO + "  checks:\n    skip: {no_such_check: why not}\n", encoding="utf-8")
    assert main(["run", "--llm-mode", "scripted"]) == EXIT_USAGE
    err = capsys.readouterr().err
    _one_paragraph(err)
    assert "'cli_smoke'" in err and "'no_such_check'" in err and "summary_persisted" in err


PARENT_PROBE = """
import sys
import harness.run.pool as parallel

def stop(*args, **kwargs):  # the moment the parent hands the run to its workers
    heavy = [m for m in ("google.adk", "google.genai.types", "databricks.sdk") if m in sys.modules]
    print("HEAVY", ",".join(heavy) or "none")
    raise SystemExit(0)

parallel.WorkerPool.run = stop
from harness.cli import main
main(["run", "-j", "2", "--no-progress", "--reports-dir", sys.argv[1]])
"""


@pytest.mark.slow
def test_the_parallel_parent_leaves_adk_and_the_databricks_sdk_to_its_workers(tmp_path: Path) -> None:
    """``run -j N``'s parent parses, loads and preflights the suite while its workers import, then hands scenarios
    out: importing ADK (~1.3 s), google-genai's types (~0.9 s) or databricks-sdk (~1.8 s) there would take a
    core from the importing workers and delay the hand-over."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", PARENT_PROBE, str(tmp_path)], cwd=repo, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "HEAVY none" in done.stdout, done.stdout + done.stderr
