"""DirectLmClient (``--lm-direct``): the executor calls the model itself, here the scripted endpoint on loopback."""

from __future__ import annotations

import sys
import time

import pytest

from harness.llm.scripted_endpoint import SLOW_ANSWER_TEXT, ScriptedEndpoint
from harness.scenario.script import SUB_LM, FaultStep, TextStep
from reference_agent.executor.direct_lm import DirectLmClient
from reference_agent.executor.lm_client import SubLmBudgetExceeded, SubLmError

MODEL = "gemini-2.5-flash"


@pytest.fixture
def endpoint_env(monkeypatch):
    def start(steps):
        endpoint = ScriptedEndpoint({SUB_LM: steps})
        endpoint.__enter__()
        monkeypatch.setenv("GOOGLE_API_KEY", "scripted-dummy-key")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", endpoint.base_url)
        started.append(endpoint)
        return endpoint

    started: list[ScriptedEndpoint] = []
    yield start
    for endpoint in started:
        endpoint.__exit__(None, None, None)


def test_single_calls_answer_with_the_bridge_metadata(endpoint_env) -> None:
    endpoint = endpoint_env([TextStep(text="positive"), TextStep(text="negative")])
    client = DirectLmClient(MODEL, max_calls=5)
    assert client.query(["Sentiment of: good"], batched=False) == ["positive"]
    assert client.query(["Sentiment of: bad"], batched=False) == ["negative"]
    client.close()
    assert [c.agent for c in endpoint.calls] == [SUB_LM, SUB_LM]
    first, second = client.calls
    # Tokens as the model reports them (usageMetadata.totalTokenCount; the scripted endpoint counts words).
    assert first["tokens"] == 3 + 1 and second["tokens"] == 3 + 1
    assert {k: first[k] for k in ("index", "request_id", "batched", "batch_size", "prompt_chars",
                                  "response_chars", "error")} == {
        "index": 0, "request_id": 1, "batched": False, "batch_size": 1, "prompt_chars": len("Sentiment of: good"),
        "response_chars": len("positive"), "error": None}
    assert second["index"] == 1 and second["request_id"] == 2 and first["latency_s"] >= 0
    assert client.used == 2 and client.tokens_used == 8


def test_a_batch_is_answered_concurrently(endpoint_env) -> None:
    endpoint = endpoint_env([FaultStep(fault="slow", delay=0.6)] * 3)
    client = DirectLmClient(MODEL, max_calls=5)
    started = time.perf_counter()
    answers = client.query(["a", "b", "c"], batched=True)
    elapsed = time.perf_counter() - started
    assert answers == [SLOW_ANSWER_TEXT] * 3
    assert elapsed < 1.5, f"three 0.6 s calls took {elapsed:.2f} s: the batch was not concurrent"
    assert len(endpoint.calls) == 3
    assert [(c["index"], c["request_id"], c["batched"], c["batch_size"]) for c in client.calls] == [
        (0, 1, True, 3), (1, 1, True, 3), (2, 1, True, 3)]
    assert len({c["latency_s"] for c in client.calls}) == 1


def test_the_call_cap_is_enforced_before_any_request(endpoint_env) -> None:
    endpoint = endpoint_env([TextStep(text="x"), TextStep(text="y")])
    client = DirectLmClient(MODEL, max_calls=2)
    client.query(["1"], batched=False)
    client.query(["2"], batched=False)
    with pytest.raises(SubLmBudgetExceeded, match="at most 2 sub-LM calls"):
        client.query(["3"], batched=False)
    assert len(endpoint.calls) == 2 and len(client.calls) == 2


def test_a_model_error_after_retries_is_a_sub_lm_error_with_the_bridge_text(endpoint_env) -> None:
    endpoint_env([FaultStep(fault="http_500")] * 3)
    client = DirectLmClient(MODEL, max_calls=5)
    with pytest.raises(SubLmError, match=r"^sub-LM call failed: the prompt failed: ServerError: 500 INTERNAL"):
        client.query(["hi"], batched=False)
    (call,) = client.calls
    assert call["error"].startswith("SubLmError: sub-LM call failed: the prompt failed: ServerError: 500")
    assert call["response_chars"] is None and call["tokens"] is None


def test_the_token_budget_stops_further_calls(endpoint_env) -> None:
    endpoint_env([TextStep(text="one two three")] * 2)
    client = DirectLmClient(MODEL, max_calls=5, max_tokens=3)
    client.query(["a"], batched=False)  # 1 + 3 tokens: the budget is used up
    with pytest.raises(SubLmError, match="token budget exhausted"):
        client.query(["b"], batched=False)


def test_a_missing_key_names_the_variable_and_the_secret_setting(monkeypatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    client = DirectLmClient(MODEL, max_calls=5)
    with pytest.raises(SubLmError) as info:
        client.query(["hi"], batched=False)
    assert "GOOGLE_API_KEY" in str(info.value) and "RLM_DATABRICKS_GENAI_SECRET" in str(info.value)
    assert client.calls == [] and client.used == 0


def test_bridge_mode_does_not_import_google_genai() -> None:
    import subprocess

    code = ("import sys; from reference_agent.executor import main; main.build_parser(); "
            "print('google.genai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
