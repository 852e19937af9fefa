"""Job_B run as a process (``python -m reference_agent.executor``), plus the REPL surface in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reference_agent.executor.lm_client import LmClient
from reference_agent.executor.repl import Repl

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent

REPO = Path(__file__).resolve().parents[2]
RESULT_KEYS = {
    "run_id", "iteration", "artifact_path", "status", "exit_code", "signal", "error", "stdout", "stderr",
    "stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated", "duration_s", "final_answer",
    "final_var", "final_error", "sublm_calls", "sublm_batches", "code_blocks", "has_final_call", "written_by", "namespace",
    "executor_process", "confinement",
}


def run_executor(tmp_path: Path, code: str, *extra: str, context: Any = None, timeout_s: float = 10) -> dict[str, Any]:
    artifact = tmp_path / "artifacts" / "code.py"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_text(code, encoding="utf-8")
    argv = [sys.executable, "-m", "reference_agent.executor", "--artifact-path", str(artifact),
            "--run-id", "r1", "--iteration", "2", "--timeout", str(timeout_s), *extra]
    if context is not None:
        ctx = tmp_path / "context.json"
        ctx.write_text(json.dumps(context), encoding="utf-8")
        argv += ["--context-path", str(ctx)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=timeout_s + 10)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    result_path = artifact.parent / "result_r1_iter2.json"
    result = json.loads(result_path.read_text(encoding="utf-8"))
    assert set(result) == RESULT_KEYS
    assert not [p for p in artifact.parent.iterdir() if p.name.endswith(".tmp")]
    return result


def test_success_with_context_and_final_var(tmp_path: Path) -> None:
    code = "total = sum(row['n'] for row in context['rows'])\nprint('total', total)\nFINAL_VAR('total')\n"
    result = run_executor(tmp_path, code, context={"rows": [{"n": 1}, {"n": 2}]})
    assert result["status"] == "success"
    assert result["exit_code"] == 0 and result["error"] is None
    assert result["stdout"] == "total 3\n"
    assert result["final_answer"] == "3" and result["final_var"] == "total" and result["final_error"] is None
    assert result["has_final_call"] is True and result["code_blocks"] == 1
    assert result["written_by"] == "executor"
    assert result["artifact_path"].endswith("code.py")
    assert result["run_id"] == "r1" and result["iteration"] == 2


def test_context_is_none_without_context_path(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "FINAL(context is None)")
    assert result["final_answer"] == "True"


def test_exception_is_reported_with_the_user_traceback(tmp_path: Path) -> None:
    code = "print('before')\ndef f():\n    return 1 / 0\nf()\n"
    result = run_executor(tmp_path, code)
    assert result["status"] == "error" and result["exit_code"] == 1
    assert result["stdout"] == "before\n"
    error = result["error"]
    assert error["type"] == "ZeroDivisionError"
    assert "code.py\", line 3, in f" in error["traceback"]
    assert "reference_agent/executor" not in error["traceback"]


def test_syntax_error_is_an_error_result(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "x = (\n")
    assert result["status"] == "error"
    assert result["error"]["type"] == "SyntaxError"


def test_infinite_loop_times_out_with_partial_stdout(tmp_path: Path) -> None:
    code = "print('partial', flush=True)\nwhile True:\n    pass\n"
    result = run_executor(tmp_path, code, timeout_s=0.5)
    assert result["status"] == "timeout"
    assert result["stdout"] == "partial\n"
    assert result["error"]["type"] == "ExecutionTimeout"
    assert 0.4 < result["duration_s"] < 5


def test_timeout_swallowed_by_user_code_still_stops_it(tmp_path: Path) -> None:
    code = (
        "import time\nprint('start')\n"
        "while True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        print('swallowed')\n"
    )
    result = run_executor(tmp_path, code, timeout_s=0.3)
    assert result["status"] == "timeout"
    assert result["stdout"].startswith("start\nswallowed\n")


def test_ten_megabytes_of_stdout_are_capped_and_counted(tmp_path: Path) -> None:
    code = "import sys\nchunk = 'x' * 9999 + '\\n'\nfor _ in range(1000):\n    sys.stdout.write(chunk)\nprint('tail', file=sys.stderr)\n"
    result = run_executor(tmp_path, code, "--output-cap", "4096")
    assert result["status"] == "success"
    assert result["stdout_bytes"] == 10_000_000
    assert result["stdout_truncated"] is True
    assert len(result["stdout"].encode()) == 4096
    assert result["stderr"] == "tail\n" and result["stderr_truncated"] is False


def test_non_utf8_bytes_do_not_crash(tmp_path: Path) -> None:
    code = "import sys\nprint('a')\nsys.stdout.buffer.write(b'\\xff\\xfe\\x80 raw\\n')\nsys.stdout.flush()\nprint('b')\n"
    result = run_executor(tmp_path, code)
    assert result["status"] == "success"
    assert result["stdout"] == "a\n\ufffd\ufffd\ufffd raw\nb\n"
    assert result["stdout_bytes"] == len(b"a\n\xff\xfe\x80 raw\nb\n")


def test_sys_exit_is_status_exit(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "print('bye')\nimport sys\nsys.exit(3)\n")
    assert result["status"] == "exit" and result["exit_code"] == 3
    assert result["stdout"] == "bye\n"


def test_final_var_of_a_missing_name_is_reported_not_raised(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "FINAL_VAR('x')\nprint('still running')\n")
    assert result["status"] == "success"
    assert result["final_answer"] is None
    assert result["final_error"] == (
        "FINAL_VAR: variable 'x' is not defined; define it in one block, then call FINAL_VAR in a later step"
    )
    assert result["stdout"] == "still running\n"


def test_printed_marker_is_not_an_answer(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "print('FINAL(42)')\ns = '''\nFINAL_VAR(s)\n'''\n")
    assert result["final_answer"] is None
    assert result["has_final_call"] is False


def test_llm_query_without_a_bridge_is_a_clear_error(tmp_path: Path) -> None:
    result = run_executor(tmp_path, "llm_query('hi')\n")
    assert result["status"] == "error"
    assert result["error"]["type"] == "RuntimeError"
    assert "--lm-address" in result["error"]["message"]


def test_executor_import_is_light() -> None:
    # Bare namespace packages (no __file__) do not count: a site-packages *-nspkg.pth (google-cloud-aiplatform's,
    # which ADK 1.x pulls in) creates 'google' and 'google.cloud' at interpreter start, before our code runs.
    code = ("import sys, reference_agent.executor.main; print(sorted(m for m, mod in sys.modules.items() "
            "if m.startswith(('google', 'pydantic')) and getattr(mod, '__file__', None)))")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# --- the REPL surface, in-process -------------------------------------------------------


def test_reserved_names_are_restored_after_a_block() -> None:
    repl = Repl(context={"a": 1})
    repl.run("context = 'clobbered'\nllm_query = None\nFINAL = print\n", "<block>")
    assert repl.namespace["context"] == {"a": 1}
    assert repl.namespace["llm_query"] == repl.llm_query
    assert repl.namespace["FINAL"] == repl.FINAL


def test_final_records_str_and_last_call_wins() -> None:
    repl = Repl()
    repl.run("FINAL_VAR('nope')\nFINAL([1, 2])\n", "<block>")
    assert repl.final_answer == "[1, 2]" and repl.final_error is None and repl.final_var is None


def test_final_var_reads_the_value_at_call_time() -> None:
    repl = Repl()
    repl.run("x = 1\nFINAL_VAR('x')\nx = 2\n", "<block>")
    assert repl.final_answer == "1" and repl.final_var == "x"


def test_final_var_given_a_value_explains_itself() -> None:
    repl = Repl()
    repl.run("x = 5\nmsg = FINAL_VAR(x)\n", "<block>")
    assert repl.final_answer is None
    assert "name as a string" in repl.final_error
    assert repl.namespace["msg"] == repl.final_error


def test_budget_is_checked_before_anything_is_sent() -> None:
    lm = LmClient("127.0.0.1:9", max_calls=1)  # nothing listens there: the budget check must come first
    repl = Repl(lm=lm)
    with pytest.raises(Exception) as excinfo:
        repl.run("llm_query_batched(['a', 'b'])", "<block>")
    assert type(excinfo.value).__name__ == "SubLmBudgetExceeded"
    assert "at most 1" in str(excinfo.value)
    assert lm.calls == []
