"""Make any non-loopback connection fail loudly while replaying.

vcrpy answers recorded HTTP calls inside the HTTP client, before any socket is
opened, so in a correct replay this guard never triggers. It catches what vcrpy
does not see: a client vcrpy does not patch, a forgotten cassette in a mode
that would record, a stray DNS lookup. Loopback (127.0.0.0/8, ::1, localhost)
and Unix sockets stay allowed, so local fakes and the scripted endpoint work.

The guard patches ``socket.socket.connect``/``connect_ex``,
``socket.create_connection`` and ``socket.getaddrinfo`` process-wide (every
thread) for the duration of the ``with`` block, and restores them afterwards.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

from harness.errors import HarnessError, NetworkBlockedError

DEFAULT_RECORD_HINT = ("--record-mode=once (or =all to re-record) with the 'scripted' or 'live' LLM mode, "
                       "outside CI")


def is_loopback(host: str | bytes | None) -> bool:
    """True for 127.0.0.0/8, ::1 (also IPv4-mapped), ``localhost`` and ``*.localhost``; False for other names."""
    if host is None or host == "":
        return True  # getaddrinfo(None, ...) means the local host
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


class NetworkGuard:
    """``with NetworkGuard():`` -- non-loopback connects and lookups raise ``NetworkBlockedError``."""

    def __init__(self, *, record_hint: str = DEFAULT_RECORD_HINT, allow_hosts: Iterable[str] = ()) -> None:
        self.record_hint = record_hint
        self.allow_hosts = frozenset(host.lower() for host in allow_hosts)
        self.blocked: list[tuple[str, Any]] = []
        self._saved: tuple[Any, Any, Any, Any] | None = None

    def _allowed(self, host: Any) -> bool:
        return is_loopback(host) or (isinstance(host, str) and host.lower() in self.allow_hosts)

    def _refuse(self, host: Any, port: Any) -> NetworkBlockedError:
        self.blocked.append((str(host), port))
        return NetworkBlockedError(
            f"Network access blocked: code under test tried to reach {host}:{port} during an offline run "
            f"(replay, or the scripted model); CI is offline. Record with {self.record_hint}. If {host} is a local service, allow it with "
            f"NetworkGuard(allow_hosts=[{str(host)!r}]).")

    def __enter__(self) -> NetworkGuard:
        if self._saved is not None:
            raise HarnessError("This NetworkGuard is already active; create a new NetworkGuard to nest guards.")
        self._saved = (socket.socket.connect, socket.socket.connect_ex, socket.create_connection,
                       socket.getaddrinfo)
        connect, connect_ex, create_connection, getaddrinfo = self._saved
        guard = self

        def check(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                if not guard._allowed(address[0]):
                    raise guard._refuse(address[0], address[1])

        def guarded_connect(self: socket.socket, address: Any) -> None:
            check(self, address)
            return connect(self, address)

        def guarded_connect_ex(self: socket.socket, address: Any) -> int:
            check(self, address)
            return connect_ex(self, address)

        def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            if not guard._allowed(address[0]):
                raise guard._refuse(address[0], address[1])
            return create_connection(address, *args, **kwargs)

        def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if not guard._allowed(host):
                raise guard._refuse(host, port)
            return getaddrinfo(host, port, *args, **kwargs)

        socket.socket.connect = guarded_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
        socket.create_connection = guarded_create_connection  # type: ignore[assignment]
        socket.getaddrinfo = guarded_getaddrinfo  # type: ignore[assignment]
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._saved is not None
        (socket.socket.connect, socket.socket.connect_ex,  # type: ignore[method-assign]
         socket.create_connection, socket.getaddrinfo) = self._saved  # type: ignore[assignment]
        self._saved = None


def block_network(*, record_hint: str = DEFAULT_RECORD_HINT, allow_hosts: Iterable[str] = ()) -> NetworkGuard:
    """A ``NetworkGuard``; spelled as a function for ``with block_network():``."""
    return NetworkGuard(record_hint=record_hint, allow_hosts=allow_hosts)
