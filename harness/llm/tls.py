"""One SSL context per process for every google-genai client the harness builds.

google-genai loads the certificate bundle into new SSL contexts for every
``Client`` (64 ms each); the harness builds two clients per scenario, which was
a quarter of a replay run (bench/results/profile.txt). The shared context is
built the way google-genai builds its own: certifi, or SSL_CERT_FILE / SSL_CERT_DIR.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from google.genai import types


@functools.cache
def _ssl_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile, capath=capath)


def shared_ssl_context() -> ssl.SSLContext:
    import certifi

    return _ssl_context(os.environ.get("SSL_CERT_FILE", certifi.where()), os.environ.get("SSL_CERT_DIR"))


def with_shared_tls(options: "types.HttpOptions | None" = None) -> "types.HttpOptions":
    """``options`` handing the shared context to google-genai's httpx and aiohttp clients."""
    from google.genai import types

    ctx = shared_ssl_context()
    options = options or types.HttpOptions()
    return options.model_copy(update={
        "client_args": {**(options.client_args or {}), "verify": ctx},
        "async_client_args": {**(options.async_client_args or {}), "ssl": ctx, "verify": ctx},
    })
