"""The scripted Gemini endpoint, driven through the real google-genai client and ADK's Gemini."""

from __future__ import annotations

import json

import httpx
import pytest
from google.genai import Client, errors, types

from harness.errors import ConfigError, MissingCredentialsError, ScriptedEndpointError
from harness.llm.modes import REPLAY_API_KEY, SCRIPTED_API_KEY, LlmMode, endpoint_for
from harness.llm.scripted_endpoint import (
    SLOW_ANSWER_TEXT,
    ScriptedEndpoint,
    agent_from_request,
    count_tokens,
)
from harness.scenario.script import SUB_LM, CallStep, FaultStep, TextStep

MODEL = "gemini-2.5-flash"
IDENTITY = 'You are an agent. Your internal name is "{}".'


def _client(endpoint: ScriptedEndpoint, **options: object) -> Client:
    http_options = types.HttpOptions(**options) if options else None  # type: ignore[arg-type]
    return endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=endpoint.base_url).genai_client(
        http_options=http_options)


def _llm_request(agent: str, text: str = "hello"):
    from google.adk.models.llm_request import LlmRequest

    return LlmRequest(model=MODEL, contents=[types.Content(role="user", parts=[types.Part(text=text)])],
                      config=types.GenerateContentConfig(system_instruction=IDENTITY.format(agent)))


def test_text_and_function_call_steps_through_sync_client() -> None:
    script = {SUB_LM: [TextStep(text="forty two"), CallStep(call="lookup", args={"q": "x"}, text="let me see")]}
    with ScriptedEndpoint(script) as endpoint:
        client = _client(endpoint)
        first = client.models.generate_content(model=MODEL, contents="what is the answer?")
        second = client.models.generate_content(model=MODEL, contents="and now?")

    assert first.text == "forty two"
    assert first.candidates[0].finish_reason == types.FinishReason.STOP
    assert first.model_version == MODEL
    assert first.usage_metadata.prompt_token_count == 4
    assert second.function_calls[0].name == "lookup" and second.function_calls[0].args == {"q": "x"}
    assert second.candidates[0].content.parts[0].text == "let me see"
    assert [(c.agent, c.index, c.step) for c in endpoint.calls] == [(SUB_LM, 0, script[SUB_LM][0]),
                                                                    (SUB_LM, 1, script[SUB_LM][1])]
    assert endpoint.calls[0].request_json["contents"][0]["parts"][0]["text"] == "what is the answer?"
    assert endpoint.unserved() == {}


async def test_async_client_and_per_agent_counters() -> None:
    script = {"analyst": [TextStep(text="a0"), TextStep(text="a1")], SUB_LM: [TextStep(text="s0")]}
    with ScriptedEndpoint(script) as endpoint:
        client = _client(endpoint)
        config = types.GenerateContentConfig(system_instruction=IDENTITY.format("analyst"))
        answers = [(await client.aio.models.generate_content(model=MODEL, contents="q", config=config)).text,
                   (await client.aio.models.generate_content(model=MODEL, contents="q")).text,
                   (await client.aio.models.generate_content(model=MODEL, contents="q", config=config)).text]
        tokens = await client.aio.models.count_tokens(model=MODEL, contents="one two three")

    assert answers == ["a0", "s0", "a1"]
    assert [(c.agent, c.index) for c in endpoint.calls] == [("analyst", 0), (SUB_LM, 0), ("analyst", 1)]
    assert tokens.total_tokens == 3  # the scripted stand-in counts words


async def test_adk_gemini_non_streaming_and_streaming() -> None:
    script = {"greeter": [TextStep(text="hi"), CallStep(call="exit_loop"), TextStep(text="streamed")]}
    with ScriptedEndpoint(script) as endpoint:
        gemini = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=endpoint.base_url).gemini()
        text = [r async for r in gemini.generate_content_async(_llm_request("greeter"))]
        call = [r async for r in gemini.generate_content_async(_llm_request("greeter"))]
        streamed = [r async for r in gemini.generate_content_async(_llm_request("greeter"), stream=True)]

    assert text[0].content.parts[0].text == "hi"
    assert call[0].content.parts[0].function_call.name == "exit_loop"
    assert streamed[-1].content.parts[0].text == "streamed" and not streamed[-1].partial
    assert [c.action for c in endpoint.calls] == ["generateContent", "generateContent", "streamGenerateContent"]
    assert {c.agent for c in endpoint.calls} == {"greeter"}


async def test_adk_agent_identity_reaches_the_endpoint() -> None:
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner

    with ScriptedEndpoint({"results_processor": [TextStep(text="summary")]}) as endpoint:
        model = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=endpoint.base_url).gemini()
        runner = InMemoryRunner(agent=LlmAgent(name="results_processor", model=model, instruction="Summarize."),
                                app_name="t")
        session = await runner.session_service.create_session(app_name="t", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        events = [e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)]

    assert events[-1].content.parts[0].text == "summary"
    assert [(c.agent, c.index) for c in endpoint.calls] == [("results_processor", 0)]


@pytest.mark.parametrize(("fault", "error", "code"), [("http_429", errors.ClientError, 429),
                                                      ("http_500", errors.ServerError, 500),
                                                      ("http_503", errors.ServerError, 503)])
def test_http_faults_raise_google_errors_without_default_retry(fault: str, error: type, code: int) -> None:
    with ScriptedEndpoint({SUB_LM: [FaultStep(fault=fault, retry_after=7)]}) as endpoint:
        with pytest.raises(error) as caught:
            client = _client(endpoint)  # keep a reference: a collected Client closes its HTTP client
            client.models.generate_content(model=MODEL, contents="q")
    assert caught.value.code == code
    assert f"scripted fault {fault}: sub_lm call index 0" in caught.value.message
    assert len(endpoint.calls) == 1  # google-genai does not retry unless HttpRetryOptions are set
    if fault == "http_429":
        assert caught.value.response.headers["retry-after"] == "7"


def test_a_retry_after_a_fault_takes_the_next_step() -> None:
    retry = types.HttpRetryOptions(attempts=2, initial_delay=0, max_delay=0, jitter=0)
    with ScriptedEndpoint({SUB_LM: [FaultStep(fault="http_503"), TextStep(text="second try")]}) as endpoint:
        client = _client(endpoint, retry_options=retry)
        answer = client.models.generate_content(model=MODEL, contents="q")
    assert answer.text == "second try"
    assert [c.step for c in endpoint.calls] == [FaultStep(fault="http_503"), TextStep(text="second try")]


@pytest.mark.parametrize("fault", ["malformed", "truncated"])
def test_broken_bodies_raise_json_errors(fault: str) -> None:
    with ScriptedEndpoint({SUB_LM: [FaultStep(fault=fault)]}) as endpoint:
        with pytest.raises(json.JSONDecodeError):
            client = _client(endpoint)  # keep a reference: a collected Client closes its HTTP client
            client.models.generate_content(model=MODEL, contents="q")


async def test_empty_and_safety_through_adk() -> None:
    with ScriptedEndpoint({"guard": [FaultStep(fault="empty"), FaultStep(fault="safety")]}) as endpoint:
        gemini = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=endpoint.base_url).gemini()
        empty = [r async for r in gemini.generate_content_async(_llm_request("guard"))]
        safety = [r async for r in gemini.generate_content_async(_llm_request("guard"))]
    assert empty[0].content.parts == []  # ADK treats "no candidates" as an empty successful answer
    assert safety[0].finish_reason == types.FinishReason.SAFETY and safety[0].error_code == "SAFETY"


def test_slow_answers_after_delay_or_times_out_and_the_retry_gets_the_next_step() -> None:
    script = {SUB_LM: [FaultStep(fault="slow", delay=0.05), FaultStep(fault="slow", delay=0.6), TextStep(text="n")]}
    with ScriptedEndpoint(script) as endpoint:
        client = _client(endpoint)
        assert client.models.generate_content(model=MODEL, contents="q").text == SLOW_ANSWER_TEXT
        impatient = _client(endpoint, timeout=150)  # milliseconds
        with pytest.raises(httpx.TimeoutException):
            impatient.models.generate_content(model=MODEL, contents="q")
        assert impatient.models.generate_content(model=MODEL, contents="q").text == "n"


def test_exhausted_script_names_agent_index_and_step_count() -> None:
    with ScriptedEndpoint({"analyst": [TextStep(text="only")]}) as endpoint:
        client = _client(endpoint)
        config = types.GenerateContentConfig(system_instruction=IDENTITY.format("analyst"))
        client.models.generate_content(model=MODEL, contents="q", config=config)
        with pytest.raises(errors.ClientError) as caught:
            client.models.generate_content(model=MODEL, contents="q", config=config)
    assert caught.value.code == 400
    assert "call index 1 of agent 'analyst'" in caught.value.message
    assert "the scenario's script for analyst has only 1 steps" in caught.value.message
    assert endpoint.calls[-1].step is None


def test_unknown_route_is_a_google_shaped_404() -> None:
    with ScriptedEndpoint({}) as endpoint:
        response = httpx.post(f"{endpoint.base_url}/v1beta/models/m:embedContent", json={})
        not_an_object = httpx.post(f"{endpoint.base_url}/v1beta/models/m:generateContent", json=[1])
    assert response.status_code == 404 and response.json()["error"]["status"] == "NOT_FOUND"
    assert not_an_object.status_code == 400 and not_an_object.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert endpoint.calls == []


def test_agent_resolution_and_token_count() -> None:
    request = {"systemInstruction": {"parts": [{"text": "Be brief.\n" + IDENTITY.format("job_builder")}]}}
    assert agent_from_request(request) == "job_builder"
    assert agent_from_request({"contents": []}) == SUB_LM
    assert count_tokens({"contents": [{"role": "user", "parts": [{"text": "a b  c"}]}]}) == 3


def test_base_url_outside_the_context_is_an_error() -> None:
    endpoint = ScriptedEndpoint({})
    with pytest.raises(ScriptedEndpointError, match="with ScriptedEndpoint"):
        _ = endpoint.base_url
    with endpoint:
        assert endpoint.base_url.startswith("http://127.0.0.1:")
    with pytest.raises(ScriptedEndpointError):
        _ = endpoint.base_url


def test_mode_endpoints() -> None:
    replay = endpoint_for(LlmMode.REPLAY, model=MODEL, env={})
    assert (replay.base_url, replay.api_key) == (None, REPLAY_API_KEY)
    scripted = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url="http://127.0.0.1:1", env={})
    assert (scripted.base_url, scripted.api_key) == ("http://127.0.0.1:1", SCRIPTED_API_KEY)
    live = endpoint_for(LlmMode.LIVE, model=MODEL, env={"GEMINI_API_KEY": "live-key-value"})
    assert live.api_key == "live-key-value" and "live-key-value" not in repr(live)
    both = {"GOOGLE_API_KEY": "google", "GEMINI_API_KEY": "gemini"}
    assert endpoint_for(LlmMode.LIVE, model=MODEL, env=both).api_key == "google"  # google-genai's precedence
    with pytest.raises(MissingCredentialsError, match="GOOGLE_API_KEY"):
        endpoint_for(LlmMode.LIVE, model=MODEL, env={})
    with pytest.raises(ConfigError, match="GOOGLE_GEMINI_BASE_URL"):
        endpoint_for(LlmMode.REPLAY, model=MODEL, env={"GOOGLE_GEMINI_BASE_URL": "http://x"})
    with pytest.raises(ConfigError, match="scripted_base_url"):
        endpoint_for(LlmMode.SCRIPTED, model=MODEL, env={})
