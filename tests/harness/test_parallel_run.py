"""``rlm-conformance run -j N``: the same exit code, verdicts, reports and snapshots as ``-j 1``, in scenario
order; a worker that dies is that scenario's ``error`` and the others go on (harness/run/pool.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from harness.snapshot.normalize import normalize_trace
from harness.trace.model import Trace

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# A handful of real scenarios: no Job_B, warm and one-shot Job_B, llm_query, a model-side block.
SCENARIOS = ("single_delegation", "app_state_two_users", "llm_query", "executor_environment_one_shot",
             "model_safety_block")
# What differs between any two runs, serial or not: timings and timestamps; ids the target draws (ADK's
# invocation ids, artifact ids), the temporary work dir (in a -j worker's temporary folder), and the state sizes
# that hold its path.
RUN_SPECIFIC = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"), "TIMESTAMP"),
    (re.compile(r'time="[\d.]+"'), 'time=""'),
    (re.compile(r">\d+\.\ds<"), ">Ts<"),
    (re.compile(r"\d+\.\d+ ?s\b"), "T s"),
    (re.compile(r"(rlm-worker-[A-Za-z0-9_]{8}/)?rlm-conformance-[A-Za-z0-9_]{8}"), "rlm-conformance-TMP"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "UUID"),
    (re.compile(r"-[0-9a-f]{4,8}(-[0-9a-f])?…"), "-ID…"),
    (re.compile(r"\b[a-z]+-[0-9a-f]{8}\b"), "invocation-ID"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])"), "ARTIFACT"),
    (re.compile(r"\d+ bytes"), "N bytes"),
    (re.compile(r"\b\d+\.\d{3,}\b"), "SECONDS"),  # execution_time_s in the state the timeline shows
    (re.compile(r">[^<>]*…<"), ">VALUE…<"),  # a value the HTML cuts short, where a timing made it longer
    (re.compile(r">[^<>]*rlm-conformance-TMP[^<>]*<"), ">VALUE…<"),  # ... or the path of a -j worker's folder
]


def _mask(text: str) -> str:
    for pattern, replacement in RUN_SPECIFIC:
        text = pattern.sub(replacement, text)
    return text


def _run(folder: Path, jobs: int, *extra: str) -> tuple[int, Path, Path]:
    """``run -j jobs`` of SCENARIOS from inside ``folder`` (so the paths the reports print are the same)."""
    import os

    args = ["run", "-j", str(jobs), "--no-progress", "--scenarios-dir", str(ROOT / "scenarios"),
            "--cassette-dir", str(ROOT / "cassettes"), "--reports-dir", "reports", "--snapshot-dir", "snapshots",
            "--snapshot-update"]
    for name in SCENARIOS:
        args += ["--scenario", name]
    before = Path.cwd()
    os.chdir(folder)
    try:
        return main([*args, *extra]), folder / "reports", folder / "snapshots"
    finally:
        os.chdir(before)


def _json_report(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["started_at"] = "TIMESTAMP"
    for result in data["results"]:
        result["duration_s"] = 0.0
        if result["trace"] is not None:  # the trace as its snapshot holds it: run-specific ids numbered
            result["trace"] = normalize_trace(Trace.model_validate(result["trace"]))
        for check in result["checks"]:
            check["explanation"] = _mask(check["explanation"])
            check["evidence"] = [_mask(line) for line in check["evidence"]]
    return data


@pytest.fixture(scope="module")
def serial_and_parallel(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[int, Path, Path, str]]:
    # An ordinary terminal's width: the summary fits it whatever the durations.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "100")
        return _serial_and_parallel(tmp_path_factory)


def _serial_and_parallel(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[int, Path, Path, str]]:
    import contextlib
    import io

    runs = {}
    for jobs in (1, 2):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code, reports, snapshots = _run(tmp_path_factory.mktemp(f"j{jobs}"), jobs)
        runs[jobs] = (code, reports, snapshots, out.getvalue())
    return runs


def test_parallel_run_gives_the_serial_exit_code_and_verdicts(serial_and_parallel) -> None:
    (code1, reports1, _, _), (code2, reports2, _, _) = serial_and_parallel[1], serial_and_parallel[2]
    assert code1 == code2 == EXIT_OK
    serial, parallel = _json_report(reports1 / "conformance.json"), _json_report(reports2 / "conformance.json")
    assert [r["scenario"] for r in parallel["results"]] == list(SCENARIOS)  # scenario order, not finishing order
    assert parallel == serial


def test_parallel_run_writes_the_serial_snapshots_byte_for_byte(serial_and_parallel) -> None:
    snapshots1, snapshots2 = serial_and_parallel[1][2], serial_and_parallel[2][2]
    names = sorted(p.name for p in snapshots1.iterdir())
    assert names == sorted(f"{s}.json" for s in SCENARIOS)
    assert sorted(p.name for p in snapshots2.iterdir()) == names
    for name in names:
        assert (snapshots2 / name).read_bytes() == (snapshots1 / name).read_bytes(), name
        assert (snapshots2 / name).read_bytes() == (ROOT / "snapshots" / name).read_bytes(), name


@pytest.mark.parametrize("filename", ["conformance.md", "conformance.xml", "conformance.html"])
def test_parallel_run_renders_the_serial_reports(serial_and_parallel, filename: str) -> None:
    reports1, reports2 = serial_and_parallel[1][1], serial_and_parallel[2][1]
    serial, parallel = (reports1 / filename).read_text(), (reports2 / filename).read_text()
    assert _mask(parallel) == _mask(serial)


def test_parallel_run_prints_the_serial_console_summary(serial_and_parallel) -> None:
    serial, parallel = serial_and_parallel[1][3], serial_and_parallel[2][3]
    # Each scenario's time differs, and with it the width of the time column: mask them, then compare every line.
    def lines(text: str) -> list[str]:
        return [" ".join(_mask(line).split()) for line in text.splitlines()]

    rows = [line.split() for line in lines(parallel) if line.split()[:1] in (["pass"], ["FAIL"], ["ERROR"])]
    assert [row[1] for row in rows] == list(SCENARIOS)  # one line per scenario, in scenario order
    assert lines(parallel) == lines(serial)
    assert any(" scenarios, " in line for line in lines(parallel))


DYING = {"b_killed": ("tests.harness.parallel_targets:killed", "was killed by SIGKILL"),
         "c_exits": ("tests.harness.parallel_targets:exits", "exited with code 3")}


def _scenarios_with_dying_ones(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    source = (ROOT / "scenarios" / "single_delegation.yaml").read_text()
    (folder / "a_first.yaml").write_text(source.replace("name: single_delegation", "name: a_first"))
    for name, (target, _) in DYING.items():
        (folder / f"{name}.yaml").write_text(source.replace("name: single_delegation", f"name: {name}\ntarget: {target}"))
    (folder / "d_last.yaml").write_text(source.replace("name: single_delegation", "name: d_last"))
    return folder


def test_a_worker_that_dies_is_that_scenarios_error_and_the_others_go_on(tmp_path: Path, capsys,
                                                                        temp_leftovers) -> None:
    """Two workers die, one killed and one exiting: each is replaced while scenarios are left, in one run. What
    they had made in their temporary folder (the scenario's work folder) goes with them: no exit handler of theirs
    ran, so the parent removes the folder it gave each worker."""
    folder = _scenarios_with_dying_ones(tmp_path)
    code = main(["run", "-j", "2", "--no-progress", "--scenarios-dir", str(folder), "--llm-mode", "scripted",
                 "--reports-dir", str(tmp_path / "reports"), "--snapshot-dir", str(tmp_path / "snapshots"),
                 "--snapshot-update", "--format", "json"])
    assert code == EXIT_FAILED
    results = json.loads((tmp_path / "reports" / "conformance.json").read_text())["results"]
    assert [(r["scenario"], r["status"]) for r in results] == [("a_first", "pass"), ("b_killed", "error"),
                                                               ("c_exits", "error"), ("d_last", "pass")]
    for result in results[1:3]:
        assert DYING[result["scenario"]][1] in result["error"] and "-j 1" in result["error"]
    out = capsys.readouterr().out
    assert "b_killed" in out and "c_exits" in out
    assert temp_leftovers() == []


def test_jobs_must_be_a_positive_number(capsys) -> None:
    assert main(["run", "-j", "0"]) == EXIT_USAGE
    assert "-j 1 or more" in capsys.readouterr().err


def test_the_default_number_of_workers_comes_from_the_environment(monkeypatch) -> None:
    from harness.errors import HarnessError
    from harness.run.pool import default_jobs

    monkeypatch.setenv("RLM_CONFORMANCE_JOBS", "3")
    assert default_jobs() == 3
    monkeypatch.delenv("RLM_CONFORMANCE_JOBS")
    assert default_jobs() >= 1
    monkeypatch.setenv("RLM_CONFORMANCE_JOBS", "many")
    with pytest.raises(HarnessError, match="RLM_CONFORMANCE_JOBS='many'"):
        default_jobs()


def test_a_copy_of_the_suite_is_runnable_elsewhere(tmp_path: Path) -> None:
    """Guard for the fixtures above: the scenarios they name exist with their cassettes and snapshots."""
    for name in SCENARIOS:
        assert (ROOT / "scenarios" / f"{name}.yaml").is_file()
        assert (ROOT / "cassettes" / f"{name}.yaml").is_file()
        shutil.copy(ROOT / "snapshots" / f"{name}.json", tmp_path)


def _children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_ctrl_c_stops_the_workers_and_exits_130(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    args = [sys.executable, "-m", "harness", "run", "-j", "2", "--no-progress", "--scenarios-dir",
            str(ROOT / "scenarios"), "--cassette-dir", str(ROOT / "cassettes"), "--reports-dir",
            str(tmp_path / "reports"), "--snapshot-dir", str(tmp_path / "snapshots"), "--snapshot-update"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Ctrl-C as a terminal gives it: SIGINT at its default in the CLI, so Python turns it into KeyboardInterrupt.
    # A test run started in the background (`tox &`, a script's `cmd &`) has SIGINT ignored, and a child inherits
    # an ignored signal: the CLI would run to the end and exit 0.
    cli = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline and cli.poll() is None:
        workers = {pid for pid in _children(cli.pid)
                   if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()} if cli.poll() is None else set()
        time.sleep(0.2)
    assert len(workers) == 2, "the two workers did not start"
    time.sleep(2)  # into their first scenarios
    cli.send_signal(signal.SIGINT)  # the parent alone, as `kill -INT` does: it must stop the workers itself
    _, err = cli.communicate(timeout=60)
    assert cli.returncode == 130, err
    assert "interrupted" in err
    time.sleep(0.5)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()
                and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    assert not (tmp_path / "reports").exists()  # an interrupted run writes no report


def test_record_in_two_workers_writes_cassettes_that_replay(tmp_path: Path, capsys, temp_leftovers) -> None:
    """The cassettes two workers record replay; the workers leave no temporary folder behind (each makes a clock
    folder and starts the reference Job_B's fork server in one)."""
    names = ["--scenario", "single_delegation", "--scenario", "app_state_two_users"]
    common = ["-j", "2", "--no-progress", "--scenarios-dir", str(ROOT / "scenarios"), "--cassette-dir",
              str(tmp_path / "cassettes"), "--reports-dir", str(tmp_path / "reports"), "--format", "json"]
    assert main(["record", *common, *names]) == EXIT_OK
    assert temp_leftovers() == []
    assert sorted(p.name for p in (tmp_path / "cassettes").iterdir()) == ["app_state_two_users.yaml",
                                                                          "single_delegation.yaml"]
    assert "cassette written" in capsys.readouterr().out
    # Replayed in this process (-j 1): what is under test is what the two workers wrote.
    replay = [a if a != "2" else "1" for a in common]
    assert main(["run", *replay, *names, "--snapshot-dir", str(ROOT / "snapshots")]) == EXIT_OK


def test_a_worker_told_to_leave_runs_the_exit_handlers(tmp_path: Path) -> None:
    """``leave_now`` skips the interpreter's teardown, not the process's exit handlers: ours (the clock folder,
    Job_B's fork server) and a user's agent's (a telemetry flush, its own files)."""
    import subprocess
    import sys

    marker = tmp_path / "flushed"
    code = ("import atexit, pathlib, harness.run.pool as parallel\n"
            f"atexit.register(pathlib.Path({str(marker)!r}).touch)\n"
            "parallel.leave_now()\n"
            "raise SystemExit(9)  # not reached: leave_now ends the process")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert marker.is_file()
