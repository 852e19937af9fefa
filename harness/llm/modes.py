"""The three LLM modes and how each one configures ADK's ``Gemini`` and a google-genai ``Client``.

* ``replay`` (the CI default): no base URL, so requests go to
  ``https://generativelanguage.googleapis.com`` where vcrpy intercepts them and
  answers from the cassette; the API key is a dummy the scrubbers know.
* ``scripted``: the local ``ScriptedEndpoint``'s base URL and a dummy key.
* ``live``: the real Gemini API with the key from ``GOOGLE_API_KEY`` (or
  ``GEMINI_API_KEY``, the same precedence google-genai uses).

All three pin the Gemini Developer API backend (``vertexai=False``) so a
``GOOGLE_GENAI_USE_VERTEXAI`` in the environment cannot change the URL shape.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError, MissingCredentialsError

if TYPE_CHECKING:
    from google.adk.models.google_llm import Gemini
    from google.genai import Client, types

REPLAY_API_KEY = "replay-dummy-key"
SCRIPTED_API_KEY = "scripted-dummy-key"
DUMMY_API_KEYS = (REPLAY_API_KEY, SCRIPTED_API_KEY)
"""Keys that are never secrets; the cassette scrubbers replace them like real ones anyway."""

API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"


class LlmMode(enum.Enum):
    """Where model answers come from."""

    REPLAY = "replay"
    SCRIPTED = "scripted"
    LIVE = "live"


@dataclass(frozen=True)
class ModelEndpoint:
    """How to reach the model in one mode: build ADK's ``Gemini`` or a genai ``Client`` from it."""

    mode: LlmMode
    model: str
    base_url: str | None
    api_key: str = field(repr=False)

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``google.genai.Client`` (and ADK's ``Gemini(client_kwargs=...)``)."""
        return {"api_key": self.api_key, "vertexai": False}

    def gemini(self, *, timeout_s: float | None = None, **kwargs: Any) -> Gemini:
        """ADK's ``Gemini`` model for this endpoint; ``kwargs`` go to ``Gemini`` (e.g. ``retry_options``).

        ``timeout_s`` is the client timeout of each model request (google-genai's
        ``HttpOptions.timeout``, in milliseconds there); None keeps the library default.
        """
        from adk_compat import gemini
        from google.genai import types

        from .tls import with_shared_tls

        client_kwargs = self.client_kwargs()
        options = types.HttpOptions(timeout=round(timeout_s * 1000)) if timeout_s is not None else None
        client_kwargs["http_options"] = with_shared_tls(options)
        return gemini(model=self.model, base_url=self.base_url, client_kwargs=client_kwargs, **kwargs)

    def genai_client(self, *, http_options: types.HttpOptions | None = None) -> Client:
        """A google-genai ``Client`` (sync, and ``.aio``) for this endpoint, e.g. for sub-LM calls."""
        from google.genai import Client, types

        from .tls import with_shared_tls

        options = (http_options or types.HttpOptions()).model_copy(update={"base_url": self.base_url})
        return Client(http_options=with_shared_tls(options), **self.client_kwargs())


def endpoint_for(mode: LlmMode, *, model: str, scripted_base_url: str | None = None,
                 env: Mapping[str, str] | None = None) -> ModelEndpoint:
    """The ``ModelEndpoint`` of ``mode``; ``scripted_base_url`` is the running endpoint's ``base_url``."""
    env = os.environ if env is None else env
    if mode is LlmMode.REPLAY:
        if env.get(BASE_URL_VARIABLE):
            raise ConfigError(f"{BASE_URL_VARIABLE} is set ({env[BASE_URL_VARIABLE]!r}) but replay sends requests "
                              f"to https://generativelanguage.googleapis.com, the host the cassettes hold. Unset "
                              f"{BASE_URL_VARIABLE} for replay runs.")
        return ModelEndpoint(mode, model, None, REPLAY_API_KEY)
    if mode is LlmMode.SCRIPTED:
        if not scripted_base_url:
            raise ConfigError("LLM mode 'scripted' needs the scripted endpoint's base URL: start "
                              "`with ScriptedEndpoint(script) as endpoint:` and pass "
                              "scripted_base_url=endpoint.base_url.")
        return ModelEndpoint(mode, model, scripted_base_url, SCRIPTED_API_KEY)
    for variable in API_KEY_VARIABLES:
        if env.get(variable):
            return ModelEndpoint(mode, model, env.get(BASE_URL_VARIABLE) or None, env[variable])
    raise MissingCredentialsError(f"LLM mode 'live' needs a Gemini API key: set {API_KEY_VARIABLES[0]} (or "
                                  f"{API_KEY_VARIABLES[1]}) in the environment, or run with the 'replay' or "
                                  f"'scripted' LLM mode, which need no key.")
