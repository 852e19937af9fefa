"""ADK agent-folder entry point: ``adk run reference_agent`` / ``adk web .`` load ``root_agent`` and ``app``.

Built from the environment (``AgentSettings.from_env``) with ADK's ``Gemini``
model; the key comes from ``GOOGLE_API_KEY`` / ``GEMINI_API_KEY`` as usual and
``GOOGLE_GEMINI_BASE_URL`` points agents and Job_B's sub-LM at another endpoint.
"""

from __future__ import annotations

from google.adk.models.google_llm import Gemini

from .app import build_app
from .backends.sublm import lazy_genai_sub_lm
from .backends.tokens import lazy_genai_token_counter
from .config import AgentSettings
from .wiring import build_local_services

settings = AgentSettings.from_env()
services = build_local_services(
    settings,
    sub_lm=lazy_genai_sub_lm(settings.model, base_url=settings.gemini_base_url),
    count_tokens=lazy_genai_token_counter(settings.model, base_url=settings.gemini_base_url),
)
app = build_app(services, model=Gemini(model=settings.model, base_url=settings.gemini_base_url))
root_agent = app.root_agent
