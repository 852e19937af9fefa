"""No model key where model-written code runs, on Databricks too (issue #34, item 7).

Job_B's supervisor takes ``GOOGLE_API_KEY`` from the environment the cluster's ``spark_env_vars`` give it, seals
itself, answers ``llm_query`` over its loopback bridge, and runs the code in a confined child with the executor's
allow-listed environment. On the workspace fake (Job_B's payload wheel run as Databricks runs it):

* the code finds the key nowhere: not in its environment, not in ``/proc/self/environ``, not in the supervisor's
  ``/proc/<ppid>/environ``, not in any ``/proc/<pid>/environ`` — while its ``llm_query`` reaches the model with it;
* the checks judge it: ``executor_environment`` passes ``executor_env_clean`` and ``executor_escape_probe``
  passes ``executor_confined``; the same scenarios fail them when the payload is broken on purpose (the key left
  in the child's environment; the child started without its confinement).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.checks.base import Status
from harness.llm.modes import LlmMode
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import load_scenarios
from reference_agent.backends.databricks import payload
from reference_agent.backends.confinement import DEFAULT_CONFINEMENT, MIB, ConfinementPolicy
from reference_agent.backends.databricks.jobs import DatabricksJobRunner, JobCompute, confinement_parameters
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.backends.jobs import JobRequest
from reference_agent.executor import supervisor

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {s.name: s for s in load_scenarios(ROOT / "scenarios")}
KEY = "rlm-test-model-key-0123456789"

_PROBE = r"""
import glob, os
print("environ:", " ".join(sorted(os.environ)))
with open("/proc/self/environ", "rb") as handle:
    print("self:", " ".join(sorted(e.split(b"=")[0].decode() for e in handle.read().split(b"\0") if e)))
try:
    with open("/proc/%d/environ" % os.getppid(), "rb") as handle:
        print("parent:", "key" if KEY in handle.read() else "read, no key")
except OSError as exc:
    print("parent: blocked", type(exc).__name__)
holders = []
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        with open(path, "rb") as handle:
            if KEY in handle.read():
                holders.append(path)
    except OSError:
        pass
print("holders:", holders)
print("answer:", llm_query("hello"))
""".replace("KEY", repr(KEY.encode()))


class _Model(BaseHTTPRequestHandler):
    """A Gemini ``generateContent`` endpoint that remembers the key each request carried."""

    keys: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).keys.append(self.headers.get("x-goog-api-key") or "")
        body = json.dumps({"candidates": [{"content": {"parts": [{"text": "model answer"}]}}],
                           "usageMetadata": {"totalTokenCount": 3}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def model() -> Iterator[tuple[str, list[str]]]:
    _Model.keys = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Model.keys
    server.shutdown()
    server.server_close()


@pytest.mark.slow
async def test_the_code_finds_the_key_nowhere_and_its_llm_query_still_uses_it(client, volume, fake, model) -> None:
    base_url, keys_seen = model
    fake.job_env.update(GOOGLE_API_KEY=KEY, GOOGLE_GEMINI_BASE_URL=base_url)  # the cluster's spark_env_vars
    runner = DatabricksJobRunner(client, volume, JobCompute(existing_cluster_id="0101-000000-fakecluster"),
                                 grace_s=2.0, startup_s=10.0, backoff=Backoff(initial_s=0.02, factor=1.5, max_s=0.1),
                                 model="gemini-2.5-flash")
    artifact = volume.path("artifacts", "agent_code_s1_iter1.py")
    volume.write_text(artifact, _PROBE)
    outcome = await runner.run(JobRequest(artifact_path=artifact, run_id="s1", iteration=1, timeout_s=20.0),
                               sub_lm=None)  # type: ignore[arg-type]  # direct mode: the host answers nothing
    result = json.loads(volume.read_text(outcome.result_json_path))
    assert result["status"] == "success", result["error"]
    lines = dict(line.split(": ", 1) for line in result["stdout"].splitlines())
    allowed = "HOME LANG PATH PYTHONHASHSEED PYTHONIOENCODING PYTHONPATH"
    assert lines["environ"] == lines["self"] == allowed
    assert lines["parent"] == "blocked PermissionError"
    assert lines["holders"] == "[]"
    assert lines["answer"] == "model answer" and keys_seen == [KEY]  # the supervisor called the model with it
    assert KEY not in json.dumps(result)
    confinement = result["confinement"]
    assert {"filesystem_read", "filesystem_write"} <= set(confinement["applied"]), confinement


def test_the_child_never_gets_the_supervisors_options() -> None:
    argv = ["--artifact-path", "/Volumes/a/b.py", "--lm-direct", "gemini-2.5-flash", "--max-sublm-tokens=9",
            "--run-id", "r", "--require-confinement", "--max-sublm-tokens", "5", "--iteration", "1",
            "--no-confinement", "--confine-limits", '{"processes": 1}']
    assert supervisor._child_argv(argv) == ["--artifact-path", "/Volumes/a/b.py", "--run-id", "r", "--iteration", "1"]


def test_the_agents_confinement_policy_becomes_task_parameters_only_where_it_differs() -> None:
    assert confinement_parameters(DEFAULT_CONFINEMENT) == []
    assert confinement_parameters(ConfinementPolicy(enabled=False, required=True)) == ["--no-confinement"]
    assert confinement_parameters(ConfinementPolicy(required=True)) == ["--require-confinement"]
    flag, limits = confinement_parameters(ConfinementPolicy(memory_bytes=256 * MIB, processes=None))
    assert flag == "--confine-limits"
    assert json.loads(limits) == {**DEFAULT_CONFINEMENT.limits(), "memory_bytes": 256 * MIB, "processes": None}


@pytest.mark.slow
async def test_the_agents_limits_reach_the_child_on_the_compute(client, volume) -> None:
    runner = DatabricksJobRunner(client, volume, JobCompute(existing_cluster_id="0101-000000-fakecluster"),
                                 grace_s=2.0, startup_s=10.0, backoff=Backoff(initial_s=0.02, factor=1.5, max_s=0.1),
                                 confinement=ConfinementPolicy(memory_bytes=256 * MIB))
    artifact = volume.path("artifacts", "agent_code_s1_iter1.py")
    volume.write_text(artifact, "block = bytearray(512 * 1024 * 1024)\n")
    outcome = await runner.run(JobRequest(artifact_path=artifact, run_id="s1", iteration=1, timeout_s=20.0),
                               sub_lm=None)  # type: ignore[arg-type]
    error = json.loads(volume.read_text(outcome.result_json_path))["error"]
    assert error["type"] == "MemoryError" and "memory limit is 256 MiB" in error["message"], error
    runner.confinement = ConfinementPolicy(enabled=False)
    outcome = await runner.run(JobRequest(artifact_path=artifact, run_id="s1", iteration=2, timeout_s=20.0),
                               sub_lm=None)  # type: ignore[arg-type]
    result = json.loads(volume.read_text(outcome.result_json_path))
    assert result["status"] == "success" and result["confinement"] is None


# --- the checks, on a payload broken on purpose ---------------------------------------------------------------

# Appended to the payload's supervisor.py: module globals that main() looks up when it runs.
DEFECTS = {
    # The key left in the child's environment (what direct mode in the code's own process amounted to).
    "key_in_child_env": (
        "_taken = take_model_credential\n"
        "_clean_env = child_env\n"
        "_held = []\n"
        "def take_model_credential(environ=None):\n"
        "    _held.append(_taken(environ))\n"
        "    return _held[-1]\n"
        "def child_env(workdir):\n"
        "    return {**_clean_env(workdir), 'GOOGLE_API_KEY': _held[-1].api_key or ''}\n"),
    # The child started without its --confine spec: the supervisor's seal alone.
    "unconfined_child": (
        "_command = child_command\n"
        "def child_command(argv):\n"
        "    at = argv.index('--confine')\n"
        "    return _command(argv[:at] + argv[at + 2:])\n"),
}


@pytest.fixture
def broken_payload(monkeypatch: pytest.MonkeyPatch):
    """``use(defect)``: Job_B's payload wheel built with the supervisor broken as ``DEFECTS[defect]`` says."""
    real = payload.payload_files

    def use(defect: str) -> None:
        def files() -> dict[str, bytes]:
            built = real()
            name = f"{payload.PACKAGE}/supervisor.py"
            built[name] = built[name] + b"\n\n" + DEFECTS[defect].encode()
            return built

        monkeypatch.setattr(payload, "payload_files", files)
        payload.build_payload_wheel.cache_clear()

    yield use
    payload.build_payload_wheel.cache_clear()


def _on_the_fake(scenario: str, tmp_path: Path):
    options = RunOptions(backend="databricks", llm_mode=LlmMode.SCRIPTED, cassette_dir=tmp_path / "cassettes",
                         work_dir=tmp_path / "work")
    result = run_scenario(SCENARIOS[scenario], options)
    assert result.error is None, result.error
    return {c.name: c for c in result.checks}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["executor_environment"])  # the _one_shot one runs the same Job_B here
def test_the_key_left_in_the_childs_environment_fails_executor_env_clean(scenario: str, tmp_path: Path,
                                                                          broken_payload) -> None:
    assert _on_the_fake(scenario, tmp_path / "clean")["executor_env_clean"].status is Status.PASS
    broken_payload("key_in_child_env")
    check = _on_the_fake(scenario, tmp_path / "broken")["executor_env_clean"]
    assert check.status is Status.FAIL, check.explanation
    evidence = " ".join(check.evidence)
    # By name and by value: the fake's Job_B holds the canary key (harness/run/canaries.py) with the scripted model.
    assert "holds the canary credential(s) planted in the host of GOOGLE_API_KEY" in evidence
    assert "outside the allow-list: GOOGLE_API_KEY" in evidence


@pytest.mark.slow  # two escape-probe runs on the fake; tox runs it, tox -e fast does not
def test_a_child_started_without_its_confinement_fails_the_escape_probe(tmp_path: Path, broken_payload) -> None:
    assert _on_the_fake("executor_escape_probe", tmp_path / "clean")["executor_confined"].status is Status.PASS
    broken_payload("unconfined_child")
    check = _on_the_fake("executor_escape_probe", tmp_path / "broken")["executor_confined"]
    assert check.status is Status.FAIL, check.explanation
    assert any("read_outside: the code could" in line for line in check.evidence), check.evidence
