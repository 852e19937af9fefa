"""The scenario clock (harness/run/clock.py): the arithmetic, the in-process travel, Python subprocesses, and an agent
whose prompts carry the time, recorded live (against a local endpoint) and replayed the next day.

tests/user_agents/clock_rlm is written as a user would write it: its instruction holds today's date and a run id
stamped to the second from ``datetime.now(timezone.utc)`` (as the upstream Databricks RLM agent's does), and its
tool runs a subprocess that prints ``datetime.now()``, which the next prompt quotes.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import time_machine
import yaml

import harness.run.clock as clock_module
from harness.run.clock import (DEFAULT_START, EXECUTOR_SITE_VARIABLE, METADATA_KEY, REAL_AGAIN_AFTER_NS, SITE_SOURCE,
                           ScenarioClock, advanced_ns, running_clock)
from harness.llm.modes import LlmMode
from harness.llm.scripted_endpoint import ScriptedEndpoint
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenario, parse_scenario
from harness.scenario.script import TextStep

AGENT_DIR = Path(__file__).resolve().parents[1] / "user_agents" / "clock_rlm"
SCENARIO = AGENT_DIR / "scenarios" / "time_in_prompt.yaml"
STEP = 1_000_000_000
MS = 1_000_000
START = int(DEFAULT_START.timestamp()) * STEP
UTC = datetime.UTC


# -- the arithmetic ------------------------------------------------------------------------------------------

def test_between_exchanges_the_clock_runs_real_speed_for_half_a_step_then_never_reaches_the_next() -> None:
    assert [advanced_ns(e, STEP) for e in (0, 1, 250 * MS, 500 * MS)] == [0, 1, 250 * MS, 500 * MS]
    elapsed = range(0, REAL_AGAIN_AFTER_NS + 1, 7 * MS)
    moved = [advanced_ns(e, STEP) for e in elapsed]
    assert all(a < b for a, b in zip(moved, moved[1:])), "strictly increasing, at millisecond readings"
    assert max(moved) < STEP  # within its second: the next exchange's instant is never reached
    # After 30 s without an exchange it runs at real speed again, so a wait on the wall clock ends.
    assert advanced_ns(REAL_AGAIN_AFTER_NS + 5 * STEP, STEP) - advanced_ns(REAL_AGAIN_AFTER_NS, STEP) == 5 * STEP


def _clock(counts: list[int], site: Path | None = None) -> ScenarioClock:
    """A clock whose exchanges are ``counts[0]`` (its real time: what the test puts in ``clock_module.time``)."""
    return ScenarioClock(start_ns=START, step_ns=STEP, exchanges=lambda: counts[0], site=site)


def test_each_exchange_moves_the_clock_one_step_and_it_never_goes_back(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    counts, real = [0], [10 * STEP]
    monkeypatch.setattr(clock_module, "time", SimpleNamespace(monotonic_ns=lambda: real[0]))
    clock = _clock(counts, tmp_path / "site")
    assert clock.time_ns() == START
    real[0] += 400 * MS
    assert clock.time_ns() == START + 400 * MS
    real[0] += 3 * STEP  # a model call in flight for 3 s: the clock stays in its second
    in_flight = clock.time_ns()
    assert START + 400 * MS < in_flight < START + STEP
    counts[0] += 1  # its answer is recorded (or played): the next step, read exactly
    assert clock.time_ns() == START + STEP and clock.exchanges == 1
    assert json.loads((tmp_path / "site" / "clock.json").read_text()) == {"instant_ns": START + STEP, "step_ns": STEP}
    assert (tmp_path / "site" / "sitecustomize.py").read_bytes() == SITE_SOURCE.read_bytes()
    counts[0] += 3  # a batch answered between two readings
    assert clock.time_ns() == START + 4 * STEP


def _seconds_read(monkeypatch: pytest.MonkeyPatch, story: list[tuple[str, float]]) -> list[int]:
    """Play ``story`` (("read", real seconds later) or ("exchange", real seconds it took)) on a fresh clock;
    the second of each reading."""
    counts, real = [0], [0]
    monkeypatch.setattr(clock_module, "time", SimpleNamespace(monotonic_ns=lambda: real[0]))
    clock = _clock(counts)
    seconds = []
    for what, took in story:
        real[0] += int(took * STEP)
        if what == "exchange":
            counts[0] += 1
        else:
            seconds.append((clock.time_ns() - START) // STEP)
    return seconds


def test_a_live_recording_and_its_replay_read_the_same_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    def story(call_s: float, work_s: float) -> list[tuple[str, float]]:
        turn = [("read", work_s), ("read", work_s), ("exchange", call_s), ("read", work_s), ("read", 0.3)]
        return [step for _ in range(4) for step in turn]

    recording = _seconds_read(monkeypatch, story(call_s=4.0, work_s=0.2))  # Gemini: seconds a call
    replay = _seconds_read(monkeypatch, story(call_s=0.001, work_s=0.01))  # the cassette: milliseconds
    assert recording == replay == [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4]


# -- in process, and in Python subprocesses ----------------------------------------------------------------------

def test_the_process_reads_the_clock_until_the_block_ends(tmp_path: Path) -> None:
    before = (os.environ.get("TZ"), os.environ.get("PYTHONPATH"), time.monotonic())
    counts = [0]
    clock = ScenarioClock(start_ns=START, step_ns=STEP, exchanges=lambda: counts[0], site=tmp_path / "site")
    with running_clock(clock):
        assert datetime.datetime.now(UTC).replace(microsecond=0) == DEFAULT_START
        assert datetime.datetime.now().replace(microsecond=0) == datetime.datetime(2026, 1, 1)  # naive: UTC
        assert datetime.date.today() == datetime.date(2026, 1, 1) and time.strftime("%Y-%m-%d") == "2026-01-01"
        counts[0] = 2
        assert time.time() == START / STEP + 2 and time.gmtime().tm_sec == 2
        assert 0 <= time.monotonic() - before[2] < 60  # monotonic and perf_counter stay real
        assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "site")
        assert os.environ[EXECUTOR_SITE_VARIABLE] == str(tmp_path / "site")
    assert time.time() > START / STEP + 86_400  # the machine's clock again (this suite runs after 2026-01-02)
    assert (os.environ.get("TZ"), os.environ.get("PYTHONPATH")) == before[:2]
    assert EXECUTOR_SITE_VARIABLE not in os.environ


PRINT_TIME = ("import builtins, datetime, os; print(datetime.datetime.now().isoformat(), "
              "datetime.datetime.now(datetime.timezone.utc).isoformat(), getattr(builtins, 'THEIRS', '-'), "
              "'TZ' in os.environ)")


def test_a_python_subprocess_starts_at_the_latest_exchange_and_runs_the_sitecustomize_it_shadows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.THEIRS = 'ran'\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(theirs))
    monkeypatch.delenv("TZ", raising=False)
    counts = [0]
    clock = ScenarioClock(start_ns=START, step_ns=STEP, exchanges=lambda: counts[0], site=tmp_path / "site")
    with running_clock(clock):
        counts[0] = 2
        clock.time_ns()
        # A clean environment but PYTHONPATH, as a REPL worker's: the clock needs no variable of its own.
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ["PYTHONPATH"]}
        printed = subprocess.run([sys.executable, "-c", PRINT_TIME], env=env, capture_output=True, text=True,
                                 check=True, timeout=60).stdout.split()
    naive, aware, shadowed, tz_variable = printed
    assert naive[:19] == aware[:19] == "2026-01-01T00:00:02" and aware.endswith("+00:00")  # naive: UTC too
    assert shadowed == "ran" and tz_variable == "False"


FORK_LATER = textwrap.dedent("""
    import datetime, os, sys, time
    print(datetime.datetime.now().isoformat()[:19], flush=True)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    pid = os.fork()
    if pid == 0:
        print(datetime.datetime.now().isoformat()[:19], flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print(datetime.datetime.now().isoformat()[:19], flush=True)
""")


def test_a_process_forked_later_starts_at_the_latest_exchange_its_parent_keeps_its_own(tmp_path: Path) -> None:
    # As a fork server's workers (reference_agent/executor/forkserver.py) start: forked, long after the server.
    counts = [0]
    clock = ScenarioClock(start_ns=START, step_ns=STEP, exchanges=lambda: counts[0], site=tmp_path / "site")
    go = tmp_path / "go"
    with running_clock(clock):
        counts[0] = 2
        clock.time_ns()
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ["PYTHONPATH"]}
        proc = subprocess.Popen([sys.executable, "-c", FORK_LATER, str(go)], env=env, stdout=subprocess.PIPE,
                                text=True)
        assert proc.stdout is not None
        started = proc.stdout.readline().strip()
        counts[0] = 5
        clock.time_ns()
        go.touch()
        forked, parent = proc.stdout.read().split()
        assert proc.wait(timeout=60) == 0
    assert started == parent == "2026-01-01T00:00:02"
    assert forked == "2026-01-01T00:00:05"


def test_a_process_without_the_clock_file_keeps_the_real_clock(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_bytes(SITE_SOURCE.read_bytes())  # and no clock.json
    printed = subprocess.run([sys.executable, "-c", "import time; print(int(time.time()))"], capture_output=True,
                             text=True, check=True, timeout=60, env={**os.environ, "PYTHONPATH": str(site)})
    assert abs(int(printed.stdout) - time.time()) < 60 and not printed.stderr


def test_the_reference_executor_puts_the_hosts_site_first_and_passes_no_variable(monkeypatch: pytest.MonkeyPatch,
                                                                                  tmp_path: Path) -> None:
    from reference_agent.backends.process import EXECUTOR_SITE_VARIABLE as THE_AGENTS
    from reference_agent.backends.process import PACKAGE_PARENT, scrubbed_env

    assert THE_AGENTS == EXECUTOR_SITE_VARIABLE
    monkeypatch.setenv(EXECUTOR_SITE_VARIABLE, "/the/site")
    env = scrubbed_env(str(tmp_path))
    assert env["PYTHONPATH"] == os.pathsep.join(["/the/site", PACKAGE_PARENT]) and EXECUTOR_SITE_VARIABLE not in env


REFERENCE_CODE = """\
# yaml-language-server: $schema=./scenario.schema.json
name: clock_in_job_b
description: The code Job_B runs prints the time.
clock_start: 2030-05-06T07:08:09Z
sessions:
  - user: u1
    turns:
      - user: What time is it?
script:
  databricks_analyst:
    - call: delegate_code_results
      args:
        code: "import datetime\\nprint('now', datetime.datetime.now(datetime.timezone.utc).isoformat())"
        instruction: Report the time.
    - call: exit_loop
  results_processor:
    - text: "It is 2030."
"""


@pytest.mark.parametrize("executor", ["warm", "one-shot"])
def test_the_reference_agents_job_b_reads_the_scenarios_clock(tmp_path: Path, executor: str) -> None:
    scenario = parse_scenario(REFERENCE_CODE, stem="clock_in_job_b")
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path, executor=executor))
    assert result.error is None, result.error
    (execution,) = result.trace.executions
    # One exchange (the analyst's call) before Job_B starts: one second after the scenario's clock_start.
    assert "now 2030-05-06T07:08:10" in execution.stdout_head, execution.stdout_head


# -- an agent whose prompts carry the time --------------------------------------------------------------------

def _states(result) -> list[dict]:
    return [e.emitted_delta for e in result.trace.events if "child_time" in e.emitted_delta]


@pytest.fixture(scope="module")
def live_recording(tmp_path_factory: pytest.TempPathFactory):
    """The scenario recorded in live mode against a local Gemini-compatible endpoint whose answers take 1.2 s."""
    folder = tmp_path_factory.mktemp("clock")
    scenario = load_scenario(SCENARIO)
    slow = {agent: [s.model_copy(update={"delay": 1.2}) if isinstance(s, TextStep) else s for s in steps]
            for agent, steps in scenario.script.items()}
    with ScriptedEndpoint(slow) as endpoint, pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("GOOGLE_API_KEY", "live-test-key")
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", endpoint.base_url)
        began = datetime.datetime.now(UTC).replace(microsecond=0)
        result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.LIVE, record=True, cassette_dir=folder))
        ended = datetime.datetime.now(UTC)
    assert result.error is None, result.error
    return folder, result, began, ended


@pytest.mark.slow
def test_a_live_recording_stores_the_real_instant_it_started_at(live_recording) -> None:
    folder, result, began, ended = live_recording
    cassette = yaml.safe_load((folder / "clock_rlm" / "time_in_prompt.yaml").read_text(encoding="utf-8"))
    stored = cassette["metadata"][METADATA_KEY]
    start = datetime.datetime.fromisoformat(stored["start"])
    assert began <= start <= ended and stored["step_s"] == 1.0
    # The tool ran after one exchange (turn 0) and after three (turn 1): the subprocess and the tool read that.
    stamps = [(s["child_time"], s["tool_time"]) for s in _states(result)]
    at = [start + datetime.timedelta(seconds=n) for n in (1, 3)]
    assert stamps == [(t.strftime("%Y-%m-%d %H:%M:%S"), t.isoformat(timespec="seconds")) for t in at]


@pytest.mark.slow
def test_its_replay_the_next_day_is_green_with_the_same_times(live_recording) -> None:
    folder, recorded, _, _ = live_recording
    tomorrow = datetime.datetime.now(UTC) + datetime.timedelta(days=1)
    with time_machine.travel(tomorrow):  # the machine's clock a day later, as in tomorrow's CI
        result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=folder))
    assert result.check("cassette").status.value == "pass", result.check("cassette").explanation
    assert _states(result) == _states(recorded)


@pytest.mark.slow
def test_without_the_clock_the_same_replay_is_stale(live_recording) -> None:
    folder, _, _, _ = live_recording
    tomorrow = datetime.datetime.now(UTC) + datetime.timedelta(days=1)
    with time_machine.travel(tomorrow):
        result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=folder,
                                                                  frozen_clock=False))
    verdict = result.check("cassette")
    assert verdict.status.value == "fail" and "is stale" in verdict.explanation, verdict.explanation
    assert "Today is" in verdict.explanation  # the first difference: the date in the instruction


def test_the_committed_cassette_replays_green() -> None:
    result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.REPLAY))
    assert result.check("cassette").status.value == "pass", result.check("cassette").explanation
    assert [s["child_time"] for s in _states(result)] == ["2026-01-01 00:00:01", "2026-01-01 00:00:03"]


def test_a_cassette_whose_clock_was_edited_by_hand_fails_naming_the_field(tmp_path: Path) -> None:
    committed = Path(__file__).resolve().parents[2] / "cassettes" / "clock_rlm" / "time_in_prompt.yaml"
    text = committed.read_text(encoding="utf-8")
    assert "start: '2026-01-01T00:00:00+00:00'" in text
    (tmp_path / "clock_rlm").mkdir()
    (tmp_path / "clock_rlm" / "time_in_prompt.yaml").write_text(
        text.replace("start: '2026-01-01T00:00:00+00:00'", "start: '2026-01-01T00:00:00'", 1), encoding="utf-8")
    result = run_scenario(load_scenario(SCENARIO), RunOptions(llm_mode=LlmMode.REPLAY, cassette_dir=tmp_path))
    verdict = result.check("cassette")
    assert verdict.status.value == "fail" and "metadata.clock needs a time zone" in verdict.explanation
