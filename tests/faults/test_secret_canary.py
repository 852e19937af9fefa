"""Secrets canary: fake credentials planted everywhere they can travel during a recording never come out.

Planted: a Gemini key (``AIza`` + 35), a Databricks token (``dapi`` + 32 hex) and a workspace host. Where
they travel while a scenario is *recorded* (live mode pointed at a scripted endpoint on 127.0.0.1):

* the ``x-goog-api-key`` header (the key is the live-mode API key, from ``GOOGLE_API_KEY``);
* JSON request bodies: the user message, the analyst's delegated code, the sub-LM prompt;
* JSON response bodies: the model script's text, function-call arguments and sub-LM answer;
* an error message and a response header of a fault answer (HTTP 500, retried until exhausted);
* Job_B's stdout (the code prints them), which comes back in the results_processor's request;
* the parent process environment (``GOOGLE_API_KEY``, ``DATABRICKS_TOKEN``, ``DATABRICKS_HOST``), which Job_B's
  scrubbed environment must not inherit.

Where they must not arrive: the cassette, the snapshot (``normalize_trace``), the reports (every format
of ``harness/report/write.py`` and the terminal table), the captured log and stdout/stderr. The host has
no pattern, so it is registered (``RunOptions(secrets=...)``); the key and token are also caught by pattern.

Lower level: query parameters, Authorization/x-databricks-token headers and a genai client built with
``endpoint_for(LlmMode.LIVE, env=...)``; a binary body; the Databricks fake's cassettes (token and host);
and saving refused (``SecretInCassetteError``, nothing written) when a scrubber misses a secret.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import httpx
import pytest

from harness.errors import SecretInCassetteError
from harness.llm.cassettes import Provenance, make_vcr, scrub_request, use_cassette
from harness.llm.modes import LlmMode, endpoint_for
from harness.llm.scripted_endpoint import ScriptedEndpoint
from harness.report.terminal import render_terminal
from harness.report.write import DEFAULT_FORMATS, write_reports
from harness.result import RunReport
from harness.run.runner import RunOptions, run_scenario
from harness.scenario.loader import parse_scenario
from harness.scenario.script import SUB_LM, FaultStep, TextStep
from harness.snapshot.normalize import normalize_trace

MODEL = "gemini-2.5-flash"
GEMINI_KEY = "AIza" + ("SyFakeCanaryKey_do-not-use" + "Q" * 40)[:35]
DATABRICKS_TOKEN = "dapi" + "c0ffee" * 5 + "ab"
WORKSPACE_HOST = "adb-9876543210123456.7.azuredatabricks.net"
CANARIES = {"Gemini key": GEMINI_KEY, "Databricks token": DATABRICKS_TOKEN, "workspace host": WORKSPACE_HOST}
PLANTED = f"key {GEMINI_KEY}, token {DATABRICKS_TOKEN}, workspace https://{WORKSPACE_HOST}"

CODE = "\n".join([
    "import os",
    f"print('planted: {PLANTED}')",
    "print('env:', sorted(k for k in os.environ if k.startswith(('GOOGLE', 'GEMINI', 'DATABRICKS'))))",
    f"print('values:', [k for k, v in os.environ.items() if v in {list(CANARIES.values())!r}])",
    f"print(llm_query('Echo this: {PLANTED}'))",
])
SCENARIO = parse_scenario(json.dumps({
    "name": "secret_canary",
    "description": "Planted credentials travel through every channel of a recorded run.",
    "tags": ["secrets"],
    "sessions": [{"user": "analyst_1", "turns": [{"user": f"Are these valid? {PLANTED}"},
                                                 {"user": f"Try again with {PLANTED}"}]}],
    "script": {
        "databricks_analyst": [
            {"call": "delegate_code_results", "args": {"code": CODE, "instruction": f"Check {PLANTED}"}},
            {"call": "exit_loop", "text": f"Done: {PLANTED}"},
            {"fault": "http_500"}, {"fault": "http_500"}, {"fault": "http_500"},
        ],
        "results_processor": [{"text": f"The code printed {PLANTED}"}],
        SUB_LM: [{"text": f"Echoed: {PLANTED}"}],
    },
}))


class LeakyEndpoint(ScriptedEndpoint):
    """The scripted endpoint, but its error answers quote the planted secrets (message and a header)."""

    async def _answer(self, step, **where):  # type: ignore[override]
        status, headers, body = await super()._answer(step, **where)
        if status >= 400:
            data = json.loads(body)
            data["error"]["message"] += f" (request had {PLANTED})"
            body = json.dumps(data).encode()
            headers = {**headers, "x-debug-credential": f"Bearer {DATABRICKS_TOKEN}", "x-workspace": WORKSPACE_HOST}
        return status, headers, body


def leaks(text: str) -> list[str]:
    return [name for name, value in CANARIES.items() if value in text]


def cassette_leaks(path: Path) -> list[str]:
    """Canaries in the cassette's text or inside its decoded values (a !!binary body is base64 in the text)."""
    import yaml

    found = leaks(path.read_text(encoding="utf-8"))

    def walk(value) -> None:
        if isinstance(value, bytes):
            found.extend(leaks(value.decode("latin-1")))
        elif isinstance(value, str):
            found.extend(leaks(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader))
    return sorted(set(found))


@pytest.fixture()
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capsys):
    """Record SCENARIO in live mode against LeakyEndpoint, with the planted values in the parent environment."""
    caplog.set_level(logging.DEBUG)  # ADK logs whole requests at DEBUG: the most a log can hold
    with LeakyEndpoint(SCENARIO.script) as server:
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.setenv("GOOGLE_API_KEY", GEMINI_KEY)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        monkeypatch.setenv("DATABRICKS_TOKEN", DATABRICKS_TOKEN)
        monkeypatch.setenv("DATABRICKS_HOST", f"https://{WORKSPACE_HOST}")
        options = RunOptions(llm_mode=LlmMode.LIVE, record=True, cassette_dir=tmp_path / "cassettes",
                             secrets=(WORKSPACE_HOST,))
        result = run_scenario(SCENARIO, options)
        requests = [json.dumps(call.request_json) for call in server.calls]
    return result, tmp_path, requests


def test_planted_secrets_reach_no_cassette_snapshot_report_or_log(recorded, caplog, capsys) -> None:
    result, tmp_path, requests = recorded
    assert result.error is None, result.error
    # the canaries did travel: in the key header, in request bodies and back from the model
    assert all(not leaks(r) or len(leaks(r)) == 3 for r in requests) and any(leaks(r) for r in requests)
    assert [t.outcome.termination for t in result.trace.turns] == ["exit_loop", "model_error"]
    assert "<scrubbed>" in (result.trace.turns[1].outcome.error or "")

    path = tmp_path / "cassettes" / "secret_canary.yaml"
    cassette = path.read_text(encoding="utf-8")
    assert cassette.count("<scrubbed>") > 10 and "x-goog-api-key:\n      - <scrubbed>" in cassette
    assert not cassette_leaks(path), "cassette"

    assert not leaks(json.dumps(normalize_trace(result.trace))), "snapshot"
    report = RunReport(results=(result,), started_at="2026-01-01T00:00:00Z", machine="canary", tool_version="0")
    written = write_reports(report, tmp_path / "reports", DEFAULT_FORMATS)
    assert set(written) == {"junit", "markdown", "html", "json"}
    for name, path in written.items():
        assert not leaks(path.read_text(encoding="utf-8")), f"{name} report"
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    render_terminal(report, console)
    assert not leaks(console.file.getvalue()), "terminal report"

    records = caplog.get_records("setup")  # the recording ran in the fixture
    logged = "\n".join(logging.Formatter("%(levelname)s %(name)s %(message)s").format(r) for r in records)
    assert len(records) > 20 and "turn failed: ServerError: 500" in logged and "Traceback" in logged
    assert not leaks(logged), "captured log"
    out, err = capsys.readouterr()
    assert not leaks(out + err), "stdout/stderr"


def test_job_b_never_inherits_the_parent_environment(recorded) -> None:
    result = recorded[0]
    stdout = [str(v) for e in result.trace.events for k, v in e.emitted_delta.items() if "stdout" in k]
    printed = "\n".join(stdout)
    assert "planted: key <scrubbed>" in printed  # the code ran and printed the canaries (scrubbed here)
    assert "env: []" in printed and "values: []" in printed


def _server_script() -> dict:
    return {SUB_LM: [TextStep(text=f"model says {PLANTED}"), FaultStep(fault="http_500"),
                     TextStep(text="raw")]}


def test_headers_query_parameters_and_error_bodies_are_scrubbed(tmp_path: Path) -> None:
    from google.genai import errors, types

    with LeakyEndpoint(_server_script()) as server:
        endpoint = endpoint_for(LlmMode.LIVE, model=MODEL,
                                env={"GOOGLE_API_KEY": GEMINI_KEY, "GOOGLE_GEMINI_BASE_URL": server.base_url})
        assert endpoint.api_key == GEMINI_KEY and endpoint.base_url == server.base_url
        recorder = make_vcr(cassette_dir=tmp_path, record_mode="all", secrets=[endpoint.api_key, WORKSPACE_HOST],
                            provenance=Provenance(recorded_against="live", model=MODEL))
        with use_cassette(recorder, "low_level"):
            client = endpoint.genai_client(http_options=types.HttpOptions(retry_options=None))
            assert client.models.generate_content(model=MODEL, contents=f"ask {PLANTED}").text.startswith("model")
            with pytest.raises(errors.ServerError) as caught:
                client.models.generate_content(model=MODEL, contents="fail")
            assert GEMINI_KEY in str(caught.value)  # the error really quoted the secrets
            answer = httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:generateContent",
                                params={"key": GEMINI_KEY, "token": DATABRICKS_TOKEN, "workspace": WORKSPACE_HOST,
                                        "note": f"see https://{WORKSPACE_HOST}/?o=1 and {DATABRICKS_TOKEN}"},
                                headers={"authorization": f"Bearer {DATABRICKS_TOKEN}",
                                         "x-databricks-token": DATABRICKS_TOKEN, "x-workspace": WORKSPACE_HOST},
                                json={"contents": [{"parts": [{"text": PLANTED}]}], "api_key": GEMINI_KEY})
            assert answer.status_code == 200
    text = (tmp_path / "low_level.yaml").read_text(encoding="utf-8")
    assert text.count("<scrubbed>") >= 12
    assert not cassette_leaks(tmp_path / "low_level.yaml")


def test_binary_bodies_are_scrubbed_too(tmp_path: Path) -> None:
    """A body that is not UTF-8 (a pickle, an archive) is YAML !!binary: base64 would hide a secret from the
    persister's final check, so the scrubbers must reach into bytes."""
    blob = b"\x80\x04\x95" + GEMINI_KEY.encode() + b"\xff\xfe" + WORKSPACE_HOST.encode() + b"\x00" + \
        DATABRICKS_TOKEN.encode()
    recorder = make_vcr(cassette_dir=tmp_path, record_mode="all", secrets=[WORKSPACE_HOST],
                        provenance=Provenance(recorded_against="live", model=MODEL))
    with ScriptedEndpoint({SUB_LM: [TextStep(text="stored")]}) as server, use_cassette(recorder, "binary"):
        httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:generateContent", content=blob,
                   headers={"content-type": "application/octet-stream"})
    import yaml

    body = yaml.load((tmp_path / "binary.yaml").read_text(encoding="utf-8"),
                     Loader=yaml.SafeLoader)["interactions"][0]["request"]["body"]
    assert isinstance(body, bytes) and body.startswith(b"\x80\x04\x95<scrubbed>\xff\xfe<scrubbed>")
    assert not cassette_leaks(tmp_path / "binary.yaml")


def test_databricks_fake_cassettes_scrub_token_and_host(tmp_path: Path) -> None:
    from harness.databricks_fake import DEFAULT_WAREHOUSE, FakeWorkspace
    from harness.databricks_fake.cassettes import make_workspace_vcr
    from reference_agent.backends.databricks.config import (
        DatabricksSettings,
        make_workspace_client,
    )
    from reference_agent.storage.databricks_engine import DatabricksSqlEngine

    with FakeWorkspace(tmp_path / "ws", token=DATABRICKS_TOKEN) as fake:
        origin = fake.host
        recorder = make_workspace_vcr(cassette_dir=tmp_path / "cassettes", record_mode="all", fake_origin=fake.host,
                                      secrets=[fake.token, WORKSPACE_HOST])
        with use_cassette(recorder, "workspace"):
            client = make_workspace_client(DatabricksSettings(host=fake.host, token=fake.token), hermetic=True)
            engine = DatabricksSqlEngine(client, DEFAULT_WAREHOUSE, sleep=lambda _: None)
            rows = engine.execute("SELECT :a AS a, :b AS b", {"a": f"https://{WORKSPACE_HOST}", "b": GEMINI_KEY})
            assert rows == [(f"https://{WORKSPACE_HOST}", GEMINI_KEY)]
            path = "/Volumes/main/rlm/vol/canary.bin"
            client.files.upload(path, io.BytesIO(b"\x80\x04" + DATABRICKS_TOKEN.encode() + b"\xff" +
                                                 WORKSPACE_HOST.encode()), overwrite=True)
            assert DATABRICKS_TOKEN.encode() in client.files.download(path).contents.read()
    text = (tmp_path / "cassettes" / "workspace.yaml").read_text(encoding="utf-8")
    assert "Authorization:\n      - <scrubbed>" in text or "authorization:\n      - <scrubbed>" in text
    assert origin not in text and text.count("!!binary") == 2  # the upload and the download
    assert not cassette_leaks(tmp_path / "cassettes" / "workspace.yaml")


def test_saving_is_refused_when_a_scrubber_misses_a_secret(tmp_path: Path) -> None:
    """The scrubbers do not know the host (not registered with them), the persister does: nothing is written."""
    import aiohttp.client

    recorder = make_vcr(cassette_dir=tmp_path / "cassettes", record_mode="all", secrets=[WORKSPACE_HOST],
                        provenance=Provenance(recorded_against="live", model=MODEL))
    recorder.before_record_request = lambda request: scrub_request(request, secrets=())  # a scrubber with a gap
    unpatched = (httpx.HTTPTransport.handle_request, aiohttp.client.ClientSession._request)
    with (ScriptedEndpoint({SUB_LM: [TextStep(text="ok")]}) as server, pytest.raises(SecretInCassetteError) as caught,
          use_cassette(recorder, "leaky")):
        httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:generateContent",
                   json={"contents": [{"parts": [{"text": f"host {WORKSPACE_HOST}"}]}]})
    message = str(caught.value)
    assert "leaky.yaml" in message and "secrets[0]" in message and "Nothing was written" in message
    assert WORKSPACE_HOST not in message
    assert not (tmp_path / "cassettes").exists() or not list((tmp_path / "cassettes").iterdir())
    assert (httpx.HTTPTransport.handle_request, aiohttp.client.ClientSession._request) == unpatched


def test_a_refused_recording_is_a_clean_scenario_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through run_scenario: a scrubber gap (simulated) ends in ScenarioResult.error, no cassette, no traceback."""
    from harness.llm import cassettes

    original = cassettes.scrub_response
    monkeypatch.setattr(cassettes, "scrub_response", lambda response, secrets=(): original(response, secrets=()))
    scenario = parse_scenario(json.dumps({
        "name": "refused", "description": "d", "sessions": [{"turns": [{"user": "hi"}]}],
        "script": {"databricks_analyst": [{"call": "exit_loop", "text": f"the host is {WORKSPACE_HOST}"}]}}))
    result = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED, record=True,
                                               cassette_dir=tmp_path / "cassettes", secrets=(WORKSPACE_HOST,)))
    assert result.error is not None and "Refused to save cassette" in result.error
    assert WORKSPACE_HOST not in result.error and "Traceback" not in result.error
    assert not (tmp_path / "cassettes" / "refused.yaml").exists()
