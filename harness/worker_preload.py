"""What every ``-j N`` worker imports, loaded once in the fork server the workers are forked from.

A spawned worker paid ~1.1 s importing ADK, google-genai and the harness, and ~0.6 s more in its first scenario
for the modules ADK imports on a Runner's first invocation (its flows, auth, workflow nodes, fastapi's types,
httpcore ...); every worker paid both, on cores the scenarios wanted. ``WorkerPool`` starts multiprocessing's
fork server with this module as its preload: the server imports it once, and each worker is forked from it with
all of that loaded (harness/parallel.py).

Only imports happen here, and only of the harness and of ADK's own modules — never a target's, whose import may
open a client or start a thread. A fork copies the one thread that forks: a lock another thread held would stay
held in every worker, so nothing imported here may start one (tests/harness/test_worker_preload.py checks the
server's threads). A module or name another ADK line lacks is skipped, and any error is swallowed: the workers
then import it themselves, as spawned workers did.
"""

from __future__ import annotations

import importlib

WORKER_MODULES = (
    # what harness.parallel._worker imports before its first scenario
    "harness.failures", "harness.scenario_run", "harness.llm.session", "harness.runner",
    # what a scenario's run imports on its way (the network guard, the gateway's TLS, the session services)
    "harness.llm.network_guard", "harness.llm.tls", "harness.targets.session_services", "harness.contract.profiles",
    "harness.clock", "time_machine",
    "vcr.stubs.aiohttp_stubs", "vcr.stubs.httpx_stubs", "vcr.stubs.requests_stubs", "vcr.stubs.urllib3_stubs",
    # what ADK imports on a Runner's first invocation (public modules; its private ones come with them)
    "google.adk.runners", "google.adk.agents.llm_agent", "google.adk.agents.loop_agent",
    "google.adk.flows.llm_flows.auto_flow", "google.adk.auth.auth_handler", "google.adk.auth.auth_preprocessor",
    "google.adk.memory.in_memory_memory_service", "google.adk.tools.agent_tool", "google.adk.tools.google_search_tool",
    "google.auth.aio.credentials", "fastapi", "httpcore",
)
LAZY_MEMBERS = (("google.adk.workflow", ("Workflow", "FunctionNode", "JoinNode")),)
"""ADK 2.x packages that load their members on first access (a module ``__getattr__``)."""


def preload() -> None:
    for name in WORKER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - the worker imports it itself: slower, never wrong
            continue
    for package, members in LAZY_MEMBERS:
        try:
            module = importlib.import_module(package)
            for member in members:
                getattr(module, member, None)
        except Exception:  # noqa: BLE001, S112 - as above
            continue


preload()
