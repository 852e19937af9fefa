"""Record against the scripted endpoint, replay offline; scrubbing, provenance, play checks."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml
from google.genai import errors, types
from vcr.errors import CannotOverwriteExistingCassetteException
from vcr.request import Request

from harness.errors import CassetteError, SecretInCassetteError
from harness.recording.matchers import method_ci
from harness.recording.misses import assert_all_played, explain_cassette_miss
from harness.recording.persister import CassettePersister, Provenance, read_provenance
from harness.recording.recorder import make_vcr, use_cassette
from harness.llm.modes import LlmMode, ModelEndpoint, endpoint_for
from harness.llm.network_guard import block_network
from harness.llm.scripted_endpoint import ScriptedEndpoint
from harness.scenario.script import SUB_LM, CallStep, FaultStep, TextStep
from tests.secret_shapes import databricks_token, google_api_key

MODEL = "gemini-2.5-flash"
OTHER_MODEL = "gemini-2.5-pro"
RERECORD = "pytest tests/scenarios -k demo --record-mode=all --llm-mode=scripted"
PLANTED = "AIzaSy" + "Q" * 33
PROVENANCE = Provenance(recorded_against="scripted", model=MODEL)
SCRIPT = {
    SUB_LM: [TextStep(text="sync answer"), TextStep(text="async answer")],
    "analyst": [CallStep(call="delegate_code_results", args={"code": "print(1)", "instruction": "sum"}),
                FaultStep(fault="http_429", retry_after=5), TextStep(text="done")],
}


def _adk_request(text: str):
    from google.adk.models.llm_request import LlmRequest

    return LlmRequest(model=MODEL, contents=[types.Content(role="user", parts=[types.Part(text=text)])],
                      config=types.GenerateContentConfig(
                          system_instruction='You are an agent. Your internal name is "analyst".'))


async def _conversation(endpoint: ModelEndpoint) -> list[object]:
    """Sync and async google-genai calls, then ADK's Gemini: a call, a 429, a text."""
    client = endpoint.genai_client()
    seen: list[object] = [client.models.generate_content(model=MODEL, contents="one").text,
                          (await client.aio.models.generate_content(model=MODEL, contents="two")).text]
    gemini = endpoint.gemini()
    async for response in gemini.generate_content_async(_adk_request("three")):
        call = response.content.parts[0].function_call
        seen.append((call.name, dict(call.args)))
    with pytest.raises(errors.ClientError) as caught:
        async for _ in gemini.generate_content_async(_adk_request("four")):
            pass
    seen.append((caught.value.code, caught.value.response.headers.get("retry-after")))
    async for response in gemini.generate_content_async(_adk_request("five")):
        seen.append(response.content.parts[0].text)
    return seen


async def _record(cassette_dir: Path, name: str = "demo") -> list[object]:
    recorder = make_vcr(cassette_dir=cassette_dir, record_mode="once", provenance=PROVENANCE)
    with ScriptedEndpoint(SCRIPT) as server:
        endpoint = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=server.base_url)
        with use_cassette(recorder, name):
            return await _conversation(endpoint)


def _replayer(cassette_dir: Path):
    return make_vcr(cassette_dir=cassette_dir, record_mode="none", provenance=PROVENANCE)


async def test_record_against_endpoint_then_replay_offline(tmp_path: Path) -> None:
    recorded = await _record(tmp_path)

    with block_network(), use_cassette(_replayer(tmp_path), "demo") as cassette:
        replayed = await _conversation(endpoint_for(LlmMode.REPLAY, model=MODEL, env={}))
        assert_all_played(cassette, scenario="demo", rerecord_command=RERECORD)
        assert cassette.all_played

    assert replayed == recorded == ["sync answer", "async answer",
                                    ("delegate_code_results", {"code": "print(1)", "instruction": "sum"}),
                                    (429, "5"), "done"]
    text = (tmp_path / "demo.yaml").read_text()
    data = yaml.safe_load(text)
    assert text.startswith("metadata:\n  provenance:\n")
    assert {i["request"]["uri"] for i in data["interactions"]} == {
        f"https://generativelanguage.googleapis.com/v1beta/models/{MODEL}:generateContent"}
    assert "127.0.0.1" not in text and "scripted-dummy-key" not in text
    assert {i["request"]["method"] for i in data["interactions"]} == {"POST", "post"}  # httpx and aiohttp
    from vcr.serialize import deserialize
    from vcr.serializers import yamlserializer

    requests, _responses, metadata = deserialize(text, yamlserializer)  # plain vcrpy reads the file
    assert len(requests) == 5 and metadata["provenance"]["tool"] == "rlm-conformance"
    provenance = read_provenance(tmp_path / "demo.yaml")
    assert provenance is not None and provenance.recorded_against == "scripted" and provenance.recorded_at
    assert not list(tmp_path.glob(".*.tmp"))


async def test_missing_interaction_is_explained(tmp_path: Path) -> None:
    await _record(tmp_path)
    endpoint = endpoint_for(LlmMode.REPLAY, model=MODEL, env={})
    with block_network(), use_cassette(_replayer(tmp_path), "demo"):
        await _conversation(endpoint)
        client = endpoint.genai_client()
        with pytest.raises(CannotOverwriteExistingCassetteException) as caught:
            client.models.generate_content(model=MODEL, contents="one more")
    message = str(explain_cassette_miss(caught.value, scenario="demo", agent_hint="sub_lm", call_index=2,
                                        rerecord_command=RERECORD))
    assert "Scenario 'demo': model call #2 of sub_lm (POST /v1beta/models/gemini-2.5-flash:generateContent)" \
        in message
    assert "already played" in message and "5 interactions recorded, 5 played" in message
    assert message.endswith(RERECORD) and "\n" not in message


def test_missing_cassette_is_explained(tmp_path: Path) -> None:
    endpoint = endpoint_for(LlmMode.REPLAY, model=MODEL, env={})
    with block_network(), use_cassette(_replayer(tmp_path), "never_recorded"):
        client = endpoint.genai_client()
        with pytest.raises(CannotOverwriteExistingCassetteException) as caught:
            client.models.generate_content(model=MODEL, contents="q")
    message = str(explain_cassette_miss(caught.value, scenario="s", agent_hint="analyst", call_index=0,
                                        rerecord_command=RERECORD))
    assert "never_recorded.yaml: the cassette file does not exist" in message


async def test_unplayed_interaction_fails_assert_all_played(tmp_path: Path) -> None:
    await _record(tmp_path)
    endpoint = endpoint_for(LlmMode.REPLAY, model=MODEL, env={})
    with block_network(), use_cassette(_replayer(tmp_path), "demo") as cassette:
        client = endpoint.genai_client()
        client.models.generate_content(model=MODEL, contents="one")
        with pytest.raises(CassetteError) as caught:
            assert_all_played(cassette, scenario="demo", rerecord_command=RERECORD)
    message = str(caught.value)
    assert "4 of 5 interactions" in message and "demo.yaml" in message and RERECORD in message
    assert "  #1: POST /v1beta/models/gemini-2.5-flash:generateContent" in message
    assert "#0:" not in message


def test_planted_secret_never_reaches_the_file_and_replay_still_matches(tmp_path: Path) -> None:
    recorder = make_vcr(cassette_dir=tmp_path, record_mode="once", provenance=PROVENANCE,
                        secrets=["db-password-123456"])
    body = {"contents": [{"parts": [{"text": f"my key is {PLANTED} and db-password-123456"}]}],
            "api_key": PLANTED, "nested": {"accessToken": "opaque-token-value"}}

    def send(base_url: str) -> httpx.Response:
        return httpx.post(f"{base_url}/v1beta/models/{MODEL}:generateContent", params={"key": PLANTED},
                          headers={"x-goog-api-key": PLANTED, "authorization": f"Bearer {PLANTED}"}, json=body)

    with ScriptedEndpoint({SUB_LM: [TextStep(text=f"echo {PLANTED}")]}) as server:
        with use_cassette(recorder, "secrets"):
            assert send(server.base_url).status_code == 200
    text = (tmp_path / "secrets.yaml").read_text()
    assert PLANTED not in text and "db-password-123456" not in text and "opaque-token-value" not in text
    assert "key=%3Cscrubbed%3E" in text or "key=<scrubbed>" in text
    assert text.count("<scrubbed>") >= 6

    with block_network(), use_cassette(_replayer(tmp_path), "secrets") as cassette:
        assert send("https://generativelanguage.googleapis.com").json()["candidates"][0]["content"]["parts"] == [
            {"text": "echo <scrubbed>"}]
        assert cassette.all_played


def test_secret_surviving_scrubbing_refuses_to_save_and_writes_nothing(tmp_path: Path) -> None:
    recorder = make_vcr(cassette_dir=tmp_path / "cassettes", record_mode="once", provenance=PROVENANCE)
    unpatched = httpx.HTTPTransport.handle_request
    with ScriptedEndpoint({SUB_LM: [TextStep(text="x")]}) as server:
        with pytest.raises(SecretInCassetteError) as caught:
            # A per-cassette hook replaces the scrubbers: the persister is the last line of defence.
            with use_cassette(recorder, "leaky", before_record_request=lambda request: request):
                httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:generateContent",
                           headers={"x-goog-api-key": PLANTED}, json={})
    message = str(caught.value)
    assert "leaky.yaml" in message and "Google API key (AIza...)" in message and PLANTED not in message
    assert not (tmp_path / "cassettes").exists() or not list((tmp_path / "cassettes").iterdir())
    assert httpx.HTTPTransport.handle_request is unpatched  # vcrpy's patches did not leak


def test_a_run_that_raises_saves_no_cassette(tmp_path: Path) -> None:
    recorder = make_vcr(cassette_dir=tmp_path, record_mode="once", provenance=PROVENANCE)
    with ScriptedEndpoint({SUB_LM: [TextStep(text="x")]}) as server:
        with pytest.raises(RuntimeError, match="target crashed"), use_cassette(recorder, "crashed"):
            httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:generateContent", json={})
            raise RuntimeError("target crashed")
    assert list(tmp_path.iterdir()) == []


def test_persister_keeps_the_old_file_when_a_save_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vcr.serializers import yamlserializer

    path = tmp_path / "c.yaml"
    path.write_text("old contents\n")
    persister = CassettePersister(provenance=PROVENANCE, secrets=["hunter2-long-secret"])
    request = Request("POST", "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
                      b'{"password": "hunter2-long-secret"}', {})
    response = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b"{}"}}
    with pytest.raises(SecretInCassetteError, match=r"the value of secrets\[0\] on line \d+"):
        persister.save_cassette(path, {"requests": [request], "responses": [response]}, yamlserializer)

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", fail)
    clean = Request("POST", "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent", b"{}", {})
    with pytest.raises(OSError, match="disk full"):
        persister.save_cassette(path, {"requests": [clean], "responses": [response]}, yamlserializer)
    assert path.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_method_matcher_ignores_case() -> None:
    post = Request("post", "https://h/p", None, {})
    method_ci(post, Request("POST", "https://h/p", None, {}))
    with pytest.raises(AssertionError, match="post != GET"):
        method_ci(post, Request("GET", "https://h/p", None, {}))


@pytest.mark.parametrize("text", [f"key {google_api_key('A0')} here", databricks_token("0"), "Bearer\nabcdefghijklmnopqrstuvwxyz012",
                                  "the planted value s3cr3t-value in a message", "nothing to see"])
def test_could_scrub_sees_a_secret_in_joined_strings(text: str) -> None:
    """scrub_result tests a trace's strings joined at once (harness/recording/scrub_outputs.py): whatever scrub_text would
    change in one string, could_scrub sees in the joined text too."""
    from harness.recording.filters import could_scrub, scrub_text

    secrets = ["s3cr3t-value"]
    joined = "\n".join(["before", "a\"quoted\\ string", text, "after"])
    assert could_scrub(joined, secrets=secrets) == (scrub_text(text, secrets=secrets) != text)


def test_secret_patterns_are_unanchored() -> None:
    """What could_scrub relies on: a match in a string is a match in any text holding it."""
    from harness.recording.secret_patterns import SECRET_PATTERNS

    for pattern in SECRET_PATTERNS.values():
        assert not any(mark in pattern.pattern for mark in ("^", "$", "\\A", "\\Z", "(?<")), pattern.pattern


def test_scrub_result_scrubs_a_secret_deep_in_the_trace() -> None:
    from harness.recording.scrub_outputs import scrub_result
    from harness.result import ScenarioResult
    from harness.trace.model import Trace, TurnOutcome, TurnRecord

    trace = Trace(scenario="s", target="t", llm_mode="replay", session_service="x", plugins=[], agents=[])
    trace.turns.append(TurnRecord(turn=0, session_id="s-0", user_id="u", message="my key is s3cr3t-value",
                                  outcome=TurnOutcome()))
    result = ScenarioResult(scenario="s", description="", target="t", llm_mode="replay", session_service="x",
                            checks=(), trace=trace, duration_s=0.0)
    assert scrub_result(result, secrets=["s3cr3t-value"]).trace.turns[0].message == "my key is <scrubbed>"
    assert scrub_result(result, secrets=["other"]).trace is trace  # nothing to scrub: the same trace


async def test_rerecording_replaces_the_whole_cassette(tmp_path: Path) -> None:
    """Record mode ``all`` (``record``) writes what this run sent and nothing older: a call the old recording held
    and the agent no longer makes (vcrpy keeps loaded interactions nothing matched, unless told to drop them) would
    be a recorded interaction replay never plays."""
    await _record(tmp_path)  # five interactions, all on MODEL's path: no call of the new run matches them
    recorder = make_vcr(cassette_dir=tmp_path, record_mode="all", provenance=PROVENANCE)
    with ScriptedEndpoint({SUB_LM: [TextStep(text="only answer")]}) as server:
        endpoint = endpoint_for(LlmMode.SCRIPTED, model=MODEL, scripted_base_url=server.base_url)
        client = endpoint.genai_client()
        with use_cassette(recorder, "demo"):
            assert client.models.generate_content(model=OTHER_MODEL, contents="one").text == "only answer"
    interactions = yaml.safe_load((tmp_path / "demo.yaml").read_text())["interactions"]
    assert len(interactions) == 1
    client = endpoint_for(LlmMode.REPLAY, model=MODEL, env={}).genai_client()
    with block_network(), use_cassette(_replayer(tmp_path), "demo") as cassette:
        assert client.models.generate_content(model=OTHER_MODEL, contents="one").text == "only answer"
        assert_all_played(cassette, scenario="demo", rerecord_command=RERECORD)
