"""executor_confined on hand-built traces: the probe's own lines, against what the harness saw from outside."""

from __future__ import annotations

import pytest

from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from harness.checks.executor_confined import ATTEMPTS
from harness.checks.testing import happy_trace, make_context
from harness.run.escape_probe import ESCAPE_PORT, SECRET
from harness.targets.profile import TargetProfile
from harness.trace.model import EscapeProbeRecord, Trace

ALL_BLOCKED = "".join(f"rlm-escape {attempt}: blocked PermissionError (EACCES)\n" for attempt in ATTEMPTS)
MISSING = {"applied": ["filesystem_write"], "missing": [{"protection": "processes", "reason": "running as root"}]}


def _trace(stdout: str, **watched: object) -> Trace:
    trace = happy_trace()
    trace.executions[0].stdout_head = stdout
    trace.escape_probe = EscapeProbeRecord(folder="/tmp/rlm-conformance-escape-0", secret=SECRET, port=ESCAPE_PORT,
                                           listening=True, **watched)  # type: ignore[arg-type]
    return trace


def _run(trace: Trace) -> CheckResult:
    [result] = run_checks(make_context(trace), only=["executor_confined"])
    return result


def test_every_attempt_stopped_passes_naming_each() -> None:
    result = _run(_trace(ALL_BLOCKED))
    assert result.status is Status.PASS, result.evidence
    assert len(result.evidence) == len(ATTEMPTS)
    assert "artifact art001 (session s1, iteration 1): connect_local: stopped (PermissionError (EACCES))" in \
        result.evidence


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_one_escaped_attempt_fails_naming_it(attempt: str) -> None:
    stdout = ALL_BLOCKED.replace(f"{attempt}: blocked PermissionError (EACCES)", f"{attempt}: escaped got out")
    result = _run(_trace(stdout))
    assert result.status is Status.FAIL
    assert result.evidence == (f"artifact art001 (session s1, iteration 1): {attempt}: the code could "
                               f"{ATTEMPTS[attempt]}: got out",)


def test_an_attempt_the_code_never_reported_fails() -> None:
    stdout = "".join(line + "\n" for line in ALL_BLOCKED.splitlines() if "processes" not in line)
    result = _run(_trace(stdout))
    assert result.status is Status.FAIL
    assert "processes: the code never reported whether it could start processes" in result.evidence[0]


@pytest.mark.parametrize(("watched", "printed", "expected"), [
    ({"connections": 1}, "", "connect_local: the harness's listener on 127.0.0.1:47913 accepted 1 connection(s)"),
    ({"written": ["/tmp/rlm-conformance-escape-0/escaped-write.txt"]}, "",
     "write_outside: /tmp/rlm-conformance-escape-0/escaped-write.txt appeared while the scenario ran"),
    ({}, f"by the way: {SECRET}\n", "read_outside: the code printed the secret planted in"),
], ids=["listener-accepted", "file-appeared", "secret-printed"])
def test_what_the_harness_saw_outside_fails_even_when_the_code_says_blocked(
        watched: dict[str, object], printed: str, expected: str) -> None:
    result = _run(_trace(ALL_BLOCKED + printed, **watched))
    assert result.status is Status.FAIL
    assert any(expected in line for line in result.evidence), result.evidence


def test_without_escape_targets_it_is_not_applicable_and_says_what_the_executor_lacks() -> None:
    trace = happy_trace()
    trace.executor_confinement = MISSING
    result = _run(trace)
    assert result.status is Status.NOT_APPLICABLE
    assert "The executor says it runs without: processes (running as root)." in result.explanation


def test_require_confinement_fails_a_missing_protection_in_any_scenario() -> None:
    trace = happy_trace()
    trace.executor_confinement, trace.confinement_required = MISSING, True
    result = _run(trace)
    assert result.status is Status.FAIL
    assert result.evidence == ("--require-confinement, and the executor runs without: processes (running as root)",)
    probed = _trace(ALL_BLOCKED)
    probed.executor_confinement, probed.confinement_required = MISSING, True
    assert _run(probed).status is Status.FAIL


def test_a_listener_the_harness_could_not_hold_is_said() -> None:
    trace = _trace(ALL_BLOCKED)
    assert trace.escape_probe is not None
    trace.escape_probe.listening, trace.escape_probe.listen_error = False, "OSError: [Errno 98] in use"
    result = _run(trace)
    assert result.status is Status.PASS
    assert any("could not listen on 127.0.0.1:47913 (OSError: [Errno 98] in use)" in e for e in result.evidence)


def test_two_watches_of_one_user_take_turns_and_each_counts_only_its_own_escape() -> None:
    """Two escape-probe scenarios at once (run -j 2, two xdist workers) share the fixed folder and port: the second
    watch starts when the first ends, so the first one's unconfined write is not counted against the second."""
    import threading
    import time
    from pathlib import Path

    from harness.run.escape_probe import WRITTEN_FILE, escape_targets

    second: dict[str, object] = {}

    def watch_second() -> None:
        with escape_targets(True) as record:
            second["entered"] = time.monotonic()
        second["record"] = record

    with escape_targets(True) as first:
        thread = threading.Thread(target=watch_second)
        thread.start()
        time.sleep(0.3)
        assert "entered" not in second  # still waiting for the first watch
        (Path(first.folder) / WRITTEN_FILE).write_text("escaped", encoding="utf-8")  # the first run's escape
        left = time.monotonic()
    thread.join(10)
    assert first.written and second["entered"] >= left
    assert second["record"].written == [] and second["record"].connections == 0


def _users_agent_trace(printed: str | None, **watched: object) -> tuple[Trace, TargetProfile]:
    """An agent without an executor record: its tool stores what the code printed under 'exec_output'."""
    profile = TargetProfile(name="mine", analyst="planner", delegate_tool="run_python", execution_key="exec_output",
                            preview_keys={"exec_output": "stdout"} if printed is not None else {})
    trace = _trace("", **watched)
    trace.executions.clear()
    trace.events[2].emitted_delta = {"exec_output": printed or "whatever"}
    return trace, profile


def _run_on(trace: Trace, profile: TargetProfile) -> CheckResult:
    [result] = run_checks(make_context(trace, profile=profile), only=["executor_confined"])
    return result


def test_on_an_agent_without_an_executor_record_the_stdout_preview_is_read() -> None:
    """The probe's lines are read from the agent's stdout preview (profile preview_keys). Without one, the code's
    reports cannot be seen: an escape the harness saw from outside still fails, and otherwise the check says what
    it cannot judge instead of calling every attempt unreported (a false alarm on a confined executor)."""
    result = _run_on(*_users_agent_trace(ALL_BLOCKED))
    assert result.status is Status.PASS, result.evidence
    assert result.evidence[0].startswith("event #2 (author databricks_analyst")
    assert "its 'exec_output' preview: write_outside: stopped" in result.evidence[0]
    escaped = ALL_BLOCKED.replace("memory: blocked PermissionError (EACCES)", "memory: escaped allocated 2 GB")
    assert _run_on(*_users_agent_trace(escaped)).status is Status.FAIL
    unseen = _run_on(*_users_agent_trace(None))
    assert unseen.status is Status.NOT_APPLICABLE, unseen.evidence
    assert "no record of what its executed code printed" in unseen.explanation
    seen_outside = _run_on(*_users_agent_trace(None, written=["/tmp/rlm-conformance-escape-0/escaped-write.txt"]))
    assert seen_outside.status is Status.FAIL
    assert "write_outside: /tmp/rlm-conformance-escape-0/escaped-write.txt appeared" in seen_outside.evidence[0]
