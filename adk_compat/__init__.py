"""The one place that knows which ADK line is installed (google-adk 1.x or 2.x).

Everything here is decided by *feature detection* on ADK's public modules — never by comparing version
strings — so a 1.x release that gains a 2.x feature (or a 2.x that drops one) is picked up as it is.
Every shim names the ADK versions it bridges and why; nothing else in the repository may branch on what
ADK has (``tests/test_adk_compat.py`` enforces that), and nothing imports a private ADK module.

Differences handled without a branch (the same code works on both lines), listed here so the table is whole:

* a plugin's ``after_model_callback``: ADK 2.x binds its CallbackContext to the model answer's event, so
  ``callback_context.actions.escalate`` reaches the event; ADK 1.x (1.39.1) gives the plugin a context of its
  own whose actions reach no event. reference_agent/plugins/model_guard.py also sets ``escalate`` on the
  event in ``on_event_callback`` (before the Runner persists it and the LoopAgent reads it).
* ADK 1.39.1 declares ``sqlalchemy`` without the ``[asyncio]`` extra (2.x's ``[db]`` extra has it), and
  SQLAlchemy 2.1 no longer brings ``greenlet``: DatabaseSessionService needs ``greenlet`` installed by us.
"""

from __future__ import annotations

import inspect
import json
import re
from functools import cached_property
from typing import Any, Optional

import google.adk.errors as _adk_errors
from google.adk.models.google_llm import Gemini
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig

__all__ = ["HAS_ADK_STALE_SESSION_ERROR", "HAS_GEMINI_CLIENT_KWARGS", "StaleSessionError", "canonical_model_request",
           "gemini", "is_stale_session_error", "ADK_SERVICES_HAVE_GET_USER_STATE", "ADK_LINE_SERVICE_DIVERGENCES",
           "GET_SESSION_CONFIG_REJECTS_NEGATIVE", "HAS_ADK_TEST_RUNNER", "adk_test_files", "normalize_adk_test_ids"]


# --- StaleSessionError -----------------------------------------------------------------------------------
# ADK 2.x: ``google.adk.errors.StaleSessionError`` (a ValueError) is what its Database/Sqlite services raise
#   when a writer appends to a session that storage has moved past.
# ADK 1.x (1.39.1): no such class; DatabaseSessionService and SqliteSessionService raise a bare ValueError
#   for the same condition. Ours derives from ValueError too, so a caller written for 2.x (``except
#   ValueError``) still catches it, and ``except StaleSessionError`` works for our own services on both lines.
HAS_ADK_STALE_SESSION_ERROR = hasattr(_adk_errors, "StaleSessionError")

if HAS_ADK_STALE_SESSION_ERROR:
    StaleSessionError = _adk_errors.StaleSessionError
else:
    class StaleSessionError(ValueError):  # type: ignore[no-redef]
        """Raised when a session write loses an optimistic concurrency race (ADK 1.x has no class for it)."""

# ADK 1.39.1's own services signal a stale writer with these bare ValueErrors (DatabaseSessionService, then
# SqliteSessionService); 2.x raises StaleSessionError with the same texts.
_ADK1_STALE_MESSAGES = (
    "The session has been modified in storage since it was loaded.",
    "The last_update_time provided in the session object is earlier than the update_time in storage.",
)


def is_stale_session_error(error: BaseException) -> bool:
    """A stale writer rejected: StaleSessionError, or (ADK 1.x, no such class) ADK's ValueError saying so."""
    if isinstance(error, StaleSessionError):
        return True
    return (not HAS_ADK_STALE_SESSION_ERROR and type(error) is ValueError
            and str(error).startswith(_ADK1_STALE_MESSAGES))


# --- What a model request looks like on the wire -----------------------------------------------------------
# A cassette recorded on one ADK line is replayed on the other, and harness/recording/drift.py compares every request
# sent with the one recorded. Two request-shape changes between ADK 1.x and 2.x carry the same content in
# another encoding; ``canonical_model_request`` writes both in one form, so what is compared is the content
# (the agent's prompt, tools, history) and not the ADK line that encoded it. Applied to both sides on every
# line: a real change of a prompt, a tool or its docstring still differs after it.
#
# 1. Function declarations. ADK 2.x (feature JSON_SCHEMA_FOR_FUNC_DECL, stable and on) sends
#    ``parameters_json_schema`` (pydantic's JSON schema: lowercase types, a ``title`` per property) and the
#    docstring cleaned (``inspect.cleandoc``); ADK 1.39.1 (the same feature is WIP and off) sends ``parameters``
#    (a genai Schema: uppercase types, no titles) and the docstring raw, indentation and trailing blank included.
#    Canonical: ``parameters`` with lowercase types and no titles, the description cleandoc'd.
# 2. Other agents' turns in an agent's history. ADK 2.x fences them as quoted data (a long "For context: below
#    is a transcript ..." preamble, then "[agent] said:\n<<<BEGIN_QUOTED_AGENT_CONTENT>>>\n...\n<<<END_...>>>");
#    ADK 1.x relays them as "For context:" and "[agent] said: ...". Canonical: ADK 1.x's form.
QUOTED_CONTENT_BEGIN = "<<<BEGIN_QUOTED_AGENT_CONTENT>>>"
QUOTED_CONTENT_END = "<<<END_QUOTED_AGENT_CONTENT>>>"
_FENCED_PREAMBLE = re.compile(r"^For context: below is a transcript of what another agent did, quoted between "
                              + re.escape(QUOTED_CONTENT_BEGIN) + r" .*$", re.DOTALL)
_FENCED_QUOTE = re.compile(r"\n" + re.escape(QUOTED_CONTENT_BEGIN) + r"\n(.*?)\n" + re.escape(QUOTED_CONTENT_END),
                           re.DOTALL)


def _canonical_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {key: (value.lower() if key == "type" and isinstance(value, str) else _canonical_schema(value))
                for key, value in schema.items() if key != "title"}
    if isinstance(schema, list):
        return [_canonical_schema(value) for value in schema]
    return schema


def _canonical_declaration(declaration: dict[str, Any]) -> dict[str, Any]:
    out = dict(declaration)
    if isinstance(out.get("description"), str):
        out["description"] = inspect.cleandoc(out["description"])
    for key in ("parameters_json_schema", "parametersJsonSchema", "parameters"):
        if key in out:
            out["parameters"] = _canonical_schema(out.pop(key))
    return out


def _canonical_text(text: str) -> str:
    if _FENCED_PREAMBLE.match(text):
        return "For context:"
    return _FENCED_QUOTE.sub(lambda m: " " + m.group(1), text)


def _canonical(node: Any, key: str | None = None) -> Any:
    if isinstance(node, dict):
        return {k: ([_canonical_declaration(d) if isinstance(d, dict) else d for d in v]
                    if k in ("functionDeclarations", "function_declarations") and isinstance(v, list)
                    else _canonical(v, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_canonical(value, key) for value in node]
    if isinstance(node, str) and key == "text":
        return _canonical_text(node)
    return node


def canonical_model_request(body: str) -> str:
    """A model request's JSON body in a form both ADK lines encode alike (text that is not JSON: unchanged)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    return json.dumps(_canonical(parsed), sort_keys=True, ensure_ascii=False)


# --- Gemini(client_kwargs=...) -----------------------------------------------------------------------------
# ADK 2.x: ``Gemini(client_kwargs={...})`` passes api_key, vertexai and http_options (timeout, TLS) to the
#   google-genai Client it builds, ADK's base_url and retry_options filling what the caller left unset.
# ADK 1.x (1.39.1): ``Gemini`` has no such field, and pydantic drops the unknown keyword *silently*: the Client is
#   built from the environment alone, so the key ("No API key was provided"), the client timeout and the shared
#   TLS settings would all be lost. ``gemini()`` gives 1.x a Gemini whose ``api_client`` (a public cached
#   property on both lines) honours client_kwargs the way 2.x does (without ADK's tracking headers).
HAS_GEMINI_CLIENT_KWARGS = "client_kwargs" in Gemini.model_fields


class GeminiWithClientKwargs(Gemini):
    """ADK 1.x's Gemini plus 2.x's ``client_kwargs`` (used only where ADK's Gemini lacks the field)."""

    client_kwargs: Optional[dict[str, Any]] = None

    @cached_property
    def api_client(self) -> Any:
        from google.genai import Client, types

        kwargs = dict(self.client_kwargs or {})
        options = kwargs.get("http_options")
        options = (types.HttpOptions() if options is None else types.HttpOptions.model_validate(options)
                   if isinstance(options, dict) else options.model_copy())
        if options.base_url is None:
            options.base_url = self.base_url
        if options.retry_options is None:
            options.retry_options = self.retry_options
        kwargs["http_options"] = options
        return Client(**kwargs)


def gemini(*, model: str, base_url: str | None = None, client_kwargs: dict[str, Any] | None = None,
           **kwargs: Any) -> Gemini:
    """ADK's ``Gemini`` with ``client_kwargs`` honoured on every ADK line."""
    cls = Gemini if HAS_GEMINI_CLIENT_KWARGS else GeminiWithClientKwargs
    return cls(model=model, base_url=base_url, client_kwargs=client_kwargs, **kwargs)


# --- ADK's own session services (the contract suite's adk-memory and adk-sqlite profiles) ---------------------
# ADK 2.x added ``BaseSessionService.get_user_state``; 1.x services have none (the contract then skips its
# get_user_state assertions, as for any service that declares it unsupported).
ADK_SERVICES_HAVE_GET_USER_STATE = hasattr(BaseSessionService, "get_user_state")

# Contract cases ADK 1.x's services fail where 2.x's pass: merged into harness/contract/profiles.py's
# DECLARED_DIVERGENCES (strict xfail: a 1.x release that fixes one fails the run until its row goes).
# Detected with StaleSessionError: the typed session errors and the num_recent_events fix came with it (2.0).
_ADK1_SERVICE_DIVERGENCES = {
    "already_exists_and_not_found": "ADK 1.x: append_event to a missing session raises a bare ValueError "
                                    "('Session ... not found.'), not SessionNotFoundError.",
}
ADK_LINE_SERVICE_DIVERGENCES: dict[str, dict[str, str]] = {} if HAS_ADK_STALE_SESSION_ERROR else {
    "adk-memory": dict(_ADK1_SERVICE_DIVERGENCES),
    "adk-sqlite": {**_ADK1_SERVICE_DIVERGENCES,
                   "get_session_config": "ADK 1.x DatabaseSessionService: GetSessionConfig(num_recent_events=0) "
                                         "returns every event (0 is read as 'no limit'), not none."},
}


# ADK 2.x validates GetSessionConfig(num_recent_events=-1) (pydantic: >= 0); ADK 1.x accepts it.
try:
    GetSessionConfig(num_recent_events=-1)
except ValueError:
    GET_SESSION_CONFIG_REJECTS_NEGATIVE = True
else:
    GET_SESSION_CONFIG_REJECTS_NEGATIVE = False


# --- `adk test` (google.adk.cli.agent_test_runner) -----------------------------------------------------------
# ADK 2.x: `adk test` runs pytest over agent_test_runner, which replays ``<agent dir>/tests/*.json`` session
#   fixtures; its ``get_test_files`` finds them, its ``_normalize_ids`` (private name, public module) numbers the
#   events and function calls of a rebuilt fixture ``e-N``/``fc-N``.
# ADK 1.x (1.39.1): no such module, no `adk test`: fixtures are found by the same rule here, and none is written.
import importlib.util as _importlib_util  # noqa: E402 (kept beside the one shim that needs it)
from pathlib import Path as _Path  # noqa: E402

ADK_TEST_RUNNER_MODULE = "google.adk.cli.agent_test_runner"
HAS_ADK_TEST_RUNNER = _importlib_util.find_spec(ADK_TEST_RUNNER_MODULE) is not None
_AGENT_FOLDER_MARKS = ("agent.py", "__init__.py", "root_agent.yaml")


def adk_test_files(folder: _Path) -> list[tuple[_Path, _Path]]:
    """``(agent dir, fixture)`` for every ``tests/*.json`` under ``folder`` whose parent's parent is an agent folder:
    ADK's own ``get_test_files`` where it exists (2.x), the same rule otherwise (1.x)."""
    if HAS_ADK_TEST_RUNNER:
        from google.adk.cli.agent_test_runner import get_test_files

        return [(_Path(p.values[0]), _Path(p.values[1])) for p in get_test_files(str(folder))]
    return [(f.parent.parent, f) for f in _Path(folder).rglob("tests/*.json")
            if any((f.parent.parent / mark).exists() for mark in _AGENT_FOLDER_MARKS)]


def normalize_adk_test_ids(events: list[Any]) -> list[Any]:
    """ADK 2.x's own normalisation of a rebuilt fixture's events (partial events dropped, ids ``e-N``/``fc-N``).
    ADK 1.x has no `adk test`: asking for it there is a mistake of the caller (check HAS_ADK_TEST_RUNNER)."""
    if not HAS_ADK_TEST_RUNNER:
        raise RuntimeError("ADK 1.x has no `adk test` (google.adk.cli.agent_test_runner): no fixture to write")
    from google.adk.cli import agent_test_runner

    return agent_test_runner._normalize_ids(events)

