"""Direct mode (``--lm-direct``): Job_B's supervisor calls the model, the code's ``LmClient`` reaches it over the
supervisor's bridge (``ModelBridge`` + ``GeminiAnswers``), here against the scripted endpoint on loopback."""

from __future__ import annotations

import json
import socket
import sys
import time

import pytest

from harness.llm.scripted_endpoint import SLOW_ANSWER_TEXT, ScriptedEndpoint
from harness.scenario.script import SUB_LM, FaultStep, TextStep
from reference_agent.executor.credential import ModelCredential, take_model_credential
from reference_agent.executor.direct_lm import GeminiAnswers
from reference_agent.executor.lm_client import LmClient, SubLmBudgetExceeded, SubLmError
from reference_agent.executor.model_bridge import ModelBridge

MODEL = "gemini-2.5-flash"


@pytest.fixture
def bridge():
    """``start(steps, max_calls=5, max_tokens=None)`` -> (endpoint, bridge, client): the supervisor's side and the
    code's, as Job_B on Databricks wires them."""
    opened: list = []

    def start(steps, *, max_calls=5, max_tokens=None, credential=None):
        endpoint = ScriptedEndpoint({SUB_LM: steps})
        endpoint.__enter__()
        opened.append(endpoint.__exit__)
        credential = credential or ModelCredential("scripted-dummy-key", endpoint.base_url)
        served = ModelBridge(GeminiAnswers(MODEL, credential, max_tokens=max_tokens), max_calls=max_calls)
        opened.append(lambda *_: served.close())
        client = LmClient(served.address, max_calls=max_calls)
        opened.append(lambda *_: client.close())
        return endpoint, served, client

    yield start
    for close in reversed(opened):
        close(None, None, None)


def test_single_calls_answer_with_the_bridge_metadata(bridge) -> None:
    endpoint, served, client = bridge([TextStep(text="positive"), TextStep(text="negative")])
    assert client.query(["Sentiment of: good"], batched=False) == ["positive"]
    assert client.query(["Sentiment of: bad"], batched=False) == ["negative"]
    assert [c.agent for c in endpoint.calls] == [SUB_LM, SUB_LM]
    first, second = client.calls
    # Tokens as the model reports them (usageMetadata.totalTokenCount; the scripted endpoint counts words).
    assert first["tokens"] == 3 + 1 and second["tokens"] == 3 + 1
    assert {k: first[k] for k in ("index", "request_id", "batched", "batch_size", "prompt_chars",
                                  "response_chars", "error")} == {
        "index": 0, "request_id": 1, "batched": False, "batch_size": 1, "prompt_chars": len("Sentiment of: good"),
        "response_chars": len("positive"), "error": None}
    assert second["index"] == 1 and second["request_id"] == 2 and first["latency_s"] >= 0
    assert client.used == 2 and served.answers.tokens_used == 8
    assert [c["tokens"] for c in served.calls] == [4, 4]  # the supervisor's own view, for a result it writes


def test_a_batch_is_answered_concurrently(bridge) -> None:
    endpoint, _, client = bridge([FaultStep(fault="slow", delay=0.6)] * 3)
    started = time.perf_counter()
    answers = client.query(["a", "b", "c"], batched=True)
    elapsed = time.perf_counter() - started
    assert answers == [SLOW_ANSWER_TEXT] * 3
    assert elapsed < 1.5, f"three 0.6 s calls took {elapsed:.2f} s: the batch was not concurrent"
    assert len(endpoint.calls) == 3
    assert [(c["index"], c["request_id"], c["batched"], c["batch_size"]) for c in client.calls] == [
        (0, 1, True, 3), (1, 1, True, 3), (2, 1, True, 3)]
    assert len({c["latency_s"] for c in client.calls}) == 1


def test_the_call_cap_is_enforced_before_any_request(bridge) -> None:
    endpoint, _, client = bridge([TextStep(text="x"), TextStep(text="y")], max_calls=2)
    client.query(["1"], batched=False)
    client.query(["2"], batched=False)
    with pytest.raises(SubLmBudgetExceeded, match="at most 2 sub-LM calls"):
        client.query(["3"], batched=False)
    assert len(endpoint.calls) == 2 and len(client.calls) == 2


def _raw(address: str, *lines: bytes) -> list[dict]:
    """What the code gets talking to the bridge's socket itself, past its client's checks."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock, sock.makefile("rwb") as stream:
        replies = []
        for line in lines:
            stream.write(line + b"\n")
            stream.flush()
            replies.append(json.loads(stream.readline()))
        return replies


def test_the_bridge_keeps_the_call_cap_and_refuses_bad_requests_from_a_raw_socket(bridge) -> None:
    endpoint, served, _ = bridge([TextStep(text="x")] * 3, max_calls=2)
    over, bad_json, no_prompts, ok = _raw(served.address, json.dumps({"id": 1, "prompts": ["a", "b", "c"]}).encode(),
                                          b"{not json", json.dumps({"id": 2, "prompts": "a"}).encode(),
                                          json.dumps({"id": 3, "prompts": ["a"]}).encode())
    assert over == {"id": 1, "error": "sub-LM budget exceeded: at most 2 sub-LM calls per run"}
    assert bad_json["id"] is None and bad_json["error"].startswith("bad request:")
    assert no_prompts == {"id": 2, "error": "bad request: request needs 'prompts': a list of strings"}
    assert ok == {"id": 3, "responses": ["x"], "tokens": [2]} and len(endpoint.calls) == 1


def test_a_model_error_after_retries_is_a_sub_lm_error_with_the_bridge_text(bridge) -> None:
    _, _, client = bridge([FaultStep(fault="http_500")] * 3)
    with pytest.raises(SubLmError, match=r"^sub-LM call failed: the prompt failed: ServerError: 500 INTERNAL"):
        client.query(["hi"], batched=False)
    (call,) = client.calls
    assert call["error"].startswith("SubLmError: sub-LM call failed: the prompt failed: ServerError: 500")
    assert call["response_chars"] is None and call["tokens"] is None


def test_the_token_budget_stops_further_calls(bridge) -> None:
    _, _, client = bridge([TextStep(text="one two three")] * 2, max_tokens=3)
    client.query(["a"], batched=False)  # 1 + 3 tokens: the budget is used up
    with pytest.raises(SubLmError, match="token budget exhausted"):
        client.query(["b"], batched=False)


def test_a_missing_key_names_the_variable_and_the_secret_setting(bridge) -> None:
    endpoint, _, client = bridge([TextStep(text="x")], credential=ModelCredential(None))
    with pytest.raises(SubLmError) as info:
        client.query(["hi"], batched=False)
    assert "GOOGLE_API_KEY" in str(info.value) and "RLM_DATABRICKS_GENAI_SECRET" in str(info.value)
    assert endpoint.calls == []


def test_the_supervisor_takes_the_key_out_of_its_environment() -> None:
    environ = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1", "PATH": "/bin"}
    credential = take_model_credential(environ)
    assert (credential.api_key, credential.base_url) == ("k", "http://127.0.0.1:1")
    assert environ == {"PATH": "/bin"} and "k" not in repr(credential)
    assert take_model_credential({}) == ModelCredential(None, None)


def test_bridge_mode_does_not_import_google_genai() -> None:
    import subprocess

    code = ("import sys; from reference_agent.executor import main; main.build_parser(); "
            "print('google.genai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
