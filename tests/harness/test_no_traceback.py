"""Nothing escapes ``run`` as a traceback: whatever a target's factory, its session service or the harness itself
raises ends as that scenario's ``error`` verdict naming the part that raised (the exception, its message and the
innermost frame), every report is written, and the exit code is EXIT_FAILED — with ``-j 1`` and in workers.

The raising parts are in tests/harness/erroring_targets.py, named by ``module:attr`` as a user names theirs.
"""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli import EXIT_FAILED, main

ROOT = Path(__file__).resolve().parents[2]
TARGETS = "tests.harness.erroring_targets"
REPORTS = ("conformance.json", "conformance.html", "conformance.md", "conformance.xml")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with one scenario (the reference agent's single delegation, judged on its script)."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "single_delegation.yaml").write_text(
        (ROOT / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    return tmp_path


def _run(workdir: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    """``run`` in scripted mode: (exit code, the JSON report's results, what the console showed)."""
    code = main(["run", "--no-progress", "--llm-mode", "scripted", "--reports-dir", "reports",
                 "--snapshot-dir", "snapshots", "--snapshot-update", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    for name in REPORTS:
        assert (workdir / "reports" / name).is_file(), name
    return code, json.loads((workdir / "reports" / "conformance.json").read_text())["results"], captured.out


def _the_error(workdir: Path, results: list[dict], scenario: str = "single_delegation") -> str:
    [result] = [r for r in results if r["scenario"] == scenario]
    assert result["status"] == "error" and result["error"], result
    error = result["error"]
    junit = ET.parse(workdir / "reports" / "conformance.xml").getroot()
    assert any(error.splitlines()[0] in (e.get("message") or "") for e in junit.iter("error"))
    assert error.splitlines()[0] in (workdir / "reports" / "conformance.md").read_text()
    return error


def test_a_target_factory_that_raises(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, results, out = _run(workdir, capsys, "--target", f"{TARGETS}:raising_factory")
    assert code == EXIT_FAILED
    error = _the_error(workdir, results)
    assert error.startswith(f"the target factory {TARGETS}:raising_factory raised ValueError: "
                            f"the factory cannot find its configuration"), error
    assert "erroring_targets.py:" in error  # the innermost frame, where it was raised
    assert "the target factory" in " ".join(out.split())


def test_a_session_service_whose_constructor_raises(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"{TARGETS}:BrokenConstructorService"
    code, results, _ = _run(workdir, capsys, "--session-service", spec)
    assert code == EXIT_FAILED
    error = _the_error(workdir, results)
    assert error.startswith(f"the session service's constructor (--session-service {spec}) raised OSError: "
                            f"cannot open the session store: Is a directory"), error
    assert "erroring_targets.py:" in error


def test_a_session_service_that_goes_down_mid_run(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Its 3rd append_event (inside the first turn) raises, and so does every call after: the turn's crash is
    # the target's, the harness's own read of the session after the turn is the service's, named by method.
    code, results, _ = _run(workdir, capsys, "--session-service", f"{TARGETS}:StoreGoesDown")
    assert code == EXIT_FAILED
    error = _the_error(workdir, results)
    assert error.startswith("the session service during get_session raised ConnectionError: "
                            "the session store went away"), error
    assert "erroring_targets.py:" in error
    assert "turn 0" in error and "ConnectionError from session service StoreGoesDown" in error


def test_a_harness_bug_is_reported_as_one(workdir: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def tripped(*args: object, **kwargs: object) -> None:
        raise KeyError("no such verdict")

    monkeypatch.setattr("harness.run.runner.run_checks", tripped)
    code, results, _ = _run(workdir, capsys)
    assert code == EXIT_FAILED
    error = _the_error(workdir, results)
    assert error.startswith("the harness (a bug: please report) raised KeyError: 'no such verdict'"), error
    assert "test_no_traceback.py:" in error  # the innermost frame ...
    assert "harness/run/runner.py:" in error.replace("\\", "/")  # ... and the frames that led to it


@pytest.mark.slow
def test_a_worker_whose_scenario_raises_gives_its_error_and_the_others_go_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    source = (ROOT / "scenarios" / "single_delegation.yaml").read_text(encoding="utf-8")
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "a_first.yaml").write_text(source.replace("name: single_delegation", "name: a_first"))
    (folder / "b_broken.yaml").write_text(source.replace(
        "name: single_delegation", f"name: b_broken\ntarget: {TARGETS}:raising_factory"))
    (folder / "c_last.yaml").write_text(source.replace("name: single_delegation", "name: c_last"))
    monkeypatch.chdir(tmp_path)
    code, results, _ = _run(tmp_path, capsys, "-j", "2")
    assert code == EXIT_FAILED
    assert [(r["scenario"], r["status"]) for r in results] == [("a_first", "pass"), ("b_broken", "error"),
                                                               ("c_last", "pass")]
    assert _the_error(tmp_path, results, "b_broken").startswith(
        f"the target factory {TARGETS}:raising_factory raised ValueError")


def test_a_worker_turns_an_exception_out_of_its_scenario_into_that_scenarios_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What is left for a worker to catch (run_one catches the rest): a bug, said as such, not raised in the
    parent. The worker runs in a thread here, so the patched run_one is the one it calls."""
    from multiprocessing import Pipe

    from harness.run import pool as parallel, scenario_run
    from harness.run.options import RunOptions
    from harness.scenario.loader import load_scenario

    def broken(*args: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'trace'")

    monkeypatch.setattr(scenario_run, "run_one", broken)
    scenario = load_scenario(ROOT / "scenarios" / "single_delegation.yaml")
    parent, child = Pipe()
    worker = threading.Thread(target=parallel._worker, args=(child, "error"))
    worker.start()
    parent.send(("run", [scenario], RunOptions(), None))
    parent.send(0)
    kind, result = parent.recv()
    parent.close()  # the worker's next recv ends it quietly
    worker.join(10)
    assert kind == "ok" and result.scenario == "single_delegation" and result.status == "error"
    assert result.error.startswith("the harness (a bug: please report) raised AttributeError"), result.error
    assert "test_no_traceback.py:" in result.error


def test_the_harness_raising_inside_a_call_to_the_service_is_still_the_harness(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness reads what the service returns (harness/run/capture.py) inside the call it blames on the service:
    when the harness's own code raises there, the innermost frame is the harness's, and so is the bug."""
    from harness.llm.modes import LlmMode
    from harness.run.runner import RunOptions, run_scenario
    from harness.scenario.loader import load_scenario

    monkeypatch.setattr("harness.run.capture._state_bytes", None)  # the harness's own line now raises TypeError
    result = run_scenario(load_scenario(ROOT / "scenarios" / "single_delegation.yaml"),
                          RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.status == "error"
    assert result.error.startswith("the harness (a bug: please report) raised TypeError"), result.error
    assert "harness/run/capture.py:" in result.error.replace("\\", "/") and "session service" not in result.error
