"""The replay network guard: non-loopback connects and lookups fail loudly, loopback works."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from harness.errors import NetworkBlockedError
from harness.llm.network_guard import NetworkGuard, block_network, is_loopback
from harness.llm.scripted_endpoint import ScriptedEndpoint
from harness.scenario.script import SUB_LM, TextStep

TEST_NET = ("203.0.113.1", 443)  # RFC 5737 TEST-NET-3: never routed; the guard refuses before connecting


def test_blocks_connect_to_a_public_address() -> None:
    with block_network(record_hint="`pytest --record-mode=once`") as guard:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            with pytest.raises(NetworkBlockedError) as caught:
                sock.connect(TEST_NET)
            with pytest.raises(NetworkBlockedError):
                sock.connect_ex(TEST_NET)
        with pytest.raises(NetworkBlockedError):
            socket.create_connection(TEST_NET, timeout=0.1)
        with pytest.raises(NetworkBlockedError):
            socket.getaddrinfo("generativelanguage.googleapis.com", 443)
    message = str(caught.value)
    assert "tried to reach 203.0.113.1:443 during an offline run" in message
    assert "Record with `pytest --record-mode=once`" in message
    assert guard.blocked[0] == TEST_NET


def test_allows_loopback_and_restores_socket_functions() -> None:
    originals = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo)
    with socket.create_server(("127.0.0.1", 0)) as server, block_network():
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
        assert socket.getaddrinfo("localhost", port)
    assert (socket.socket.connect, socket.socket.connect_ex, socket.create_connection,
            socket.getaddrinfo) == originals


def test_http_clients_fail_loudly_and_are_not_retried_as_connection_errors() -> None:
    with block_network():
        with pytest.raises(NetworkBlockedError):
            httpx.get("https://203.0.113.1/", timeout=1)

        async def fetch() -> None:
            import aiohttp

            async with aiohttp.ClientSession() as session:
                await session.get("https://generativelanguage.googleapis.com/", timeout=aiohttp.ClientTimeout(1))

        with pytest.raises(NetworkBlockedError):
            asyncio.run(fetch())


def test_the_scripted_endpoint_works_under_the_guard() -> None:
    with ScriptedEndpoint({SUB_LM: [TextStep(text="local")]}) as endpoint, block_network():
        response = httpx.post(f"{endpoint.base_url}/v1beta/models/m:generateContent", json={})
    assert response.json()["candidates"][0]["content"]["parts"][0]["text"] == "local"


def test_allow_hosts_and_loopback_detection() -> None:
    with NetworkGuard(allow_hosts=["203.0.113.1"]):  # numeric, so the real getaddrinfo needs no DNS
        assert socket.getaddrinfo(*TEST_NET, type=socket.SOCK_STREAM)[0][4] == TEST_NET
        with pytest.raises(NetworkBlockedError):
            socket.getaddrinfo("203.0.113.2", 443)
    assert all(map(is_loopback, ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LOCALHOST.",
                                 "api.localhost", "::ffff:127.0.0.1", None]))
    assert not any(map(is_loopback, ["203.0.113.1", "10.0.0.1", "::2", "example.com", "127.example.com"]))


async def test_an_unrecorded_genai_call_fails_at_once() -> None:
    from harness.llm.modes import LlmMode, endpoint_for

    client = endpoint_for(LlmMode.REPLAY, model="gemini-2.5-flash", env={}).genai_client()
    with block_network():
        with pytest.raises(NetworkBlockedError, match="generativelanguage.googleapis.com:443"):
            await client.aio.models.generate_content(model="gemini-2.5-flash", contents="q")
        with pytest.raises(NetworkBlockedError):
            client.models.generate_content(model="gemini-2.5-flash", contents="q")
