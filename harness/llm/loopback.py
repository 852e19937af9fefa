"""An aiohttp app served on 127.0.0.1 from a thread of its own, for the harness's local model endpoints.

The scripted endpoint and the model gateway both answer HTTP while the target runs in the caller's event loop
(or in a subprocess), so each gets its own loop in a daemon thread. ``start()`` returns once the port is bound,
or re-raises in the caller's thread what kept the server from starting; ``stop()`` shuts it down and joins.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any


class LoopbackServer:
    def __init__(self, add_routes: Callable[[Any], None], *, name: str, client_max_size: int = 1024 ** 2) -> None:
        self._add_routes = add_routes
        self._name = name
        self._client_max_size = client_max_size
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port: int | None = None
        self._startup_error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> int:
        """Serve; the bound port. Raises what kept the server from listening."""
        ready = threading.Event()
        self._startup_error = None
        self._thread = threading.Thread(target=self._serve, args=(ready,), name=self._name, daemon=True)
        self._thread.start()
        ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise self._startup_error
        assert self.port is not None
        return self.port

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread, self._loop, self.port = None, None, None

    def _serve(self, ready: threading.Event) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=self._client_max_size)
        self._add_routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port, self._loop = runner.addresses[0][1], loop
        except BaseException as exc:  # re-raised by start() in the caller's thread, with its traceback
            self._startup_error = exc
            with contextlib.suppress(Exception):
                loop.run_until_complete(runner.cleanup())
            loop.close()
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()
