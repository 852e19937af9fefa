"""executor_env_clean on hand-built traces: what the probe printed, against the profile's allow-list and the canaries."""

from __future__ import annotations

import pytest

from harness.run.canaries import canary_value
from harness.checks import run_checks
from harness.checks.base import CheckResult, Status
from harness.checks.testing import happy_trace, make_context
from harness.targets.profile import TargetProfile
from harness.targets.reference_profile import reference_profile
from harness.trace.model import Trace

CLEAN = "rlm-env names: HOME LANG PATH PYTHONHASHSEED PYTHONIOENCODING PYTHONPATH\nrlm-env canaries: -\n"


def _trace(stdout: str, *, mode: str = "warm") -> Trace:
    trace = happy_trace()
    trace.executions[0].stdout_head = stdout
    trace.executions[0].metrics = {"executor_process": {"mode": mode, "blocks": 1}}
    return trace


def _run(trace: Trace, profile: TargetProfile | None = None) -> CheckResult:
    [result] = run_checks(make_context(trace, profile=profile), only=["executor_env_clean"])
    return result


def test_the_allowed_names_pass_and_locale_variables_are_no_concern() -> None:
    result = _run(_trace(CLEAN.replace("HOME ", "HOME LC_CTYPE ")))
    assert result.status is Status.PASS, result.evidence
    assert "(session s1, iteration 1, warm Job_B): sees only HOME, LC_CTYPE, LANG, PATH" in result.evidence[0]


def test_a_name_outside_the_allow_list_fails_naming_it() -> None:
    result = _run(_trace(CLEAN.replace("PATH ", "PATH SPARK_HOME ", 1), mode="one-shot"))
    assert result.status is Status.FAIL
    assert "one-shot Job_B): the code's environment sees variable(s) outside the allow-list: SPARK_HOME" in \
        result.evidence[0]
    assert _run(_trace(CLEAN.replace("PATH ", "PATH SPARK_HOME ", 1)),
                reference_profile().model_copy(update={"executor_env_allowed": (*reference_profile().executor_env_allowed, "SPARK_HOME")})
                ).status is Status.PASS


@pytest.mark.parametrize("stdout", [
    CLEAN.replace("canaries: -", "canaries: PYTHONPATH"),  # a canary value under an allowed name
    CLEAN + f"the token is {canary_value('DATABRICKS_TOKEN')}\n",  # printed outright, probe or not
    f"token={canary_value('DATABRICKS_TOKEN')}\n",
], ids=["under-an-allowed-name", "printed-beside-the-probe", "printed-without-a-probe"])
def test_a_canary_value_fails_wherever_the_code_saw_it(stdout: str) -> None:
    result = _run(_trace(stdout))
    assert result.status is Status.FAIL
    assert "holds the canary credential(s) planted in the host" in result.evidence[0]


def test_without_a_probe_the_check_does_not_apply() -> None:
    assert _run(_trace("200\n")).status is Status.NOT_APPLICABLE


def _users_agent_trace(printed: str | None) -> tuple[Trace, TargetProfile]:
    """An agent without an executor record: its tool stores what the code printed under 'exec_output'."""
    profile = TargetProfile(name="mine", analyst="planner", delegate_tool="run_python", execution_key="exec_output",
                            preview_keys={"exec_output": "stdout"} if printed is not None else {})
    trace = happy_trace()
    trace.executions.clear()
    execution = trace.events[2]
    execution.emitted_delta = {"exec_output": printed or "whatever"}
    return trace, profile


def test_on_an_agent_without_an_executor_record_the_stdout_preview_is_read() -> None:
    """Another agent keeps what its code printed in state (profile preview_keys): the probe is judged there, and
    where neither that nor an executor record exists, the check says it cannot see the code's output."""
    trace, profile = _users_agent_trace(CLEAN.replace("PATH ", "PATH AWS_SECRET_ACCESS_KEY ", 1))
    result = _run(trace, profile)
    assert result.status is Status.FAIL, result.evidence
    assert "its 'exec_output' preview: the code's environment sees variable(s) outside the allow-list: " \
           "AWS_SECRET_ACCESS_KEY" in result.evidence[0]
    assert _run(*_users_agent_trace(CLEAN)).status is Status.PASS
    unseen = _run(*_users_agent_trace(None))
    assert unseen.status is Status.NOT_APPLICABLE
    assert "no record of what its executed code printed" in unseen.explanation
