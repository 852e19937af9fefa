"""A warm Job_B: one process per session that runs block after block in one live namespace.

``python -m reference_agent.executor.worker --request-fd R --reply-fd W`` reads
one request per line on fd R: the argv (a JSON list) a one-shot
``python -m reference_agent.executor`` run would get. Each block runs through
the same ``main.run`` (same result JSON, same namespace snapshot in the volume),
but the namespace stays in memory, so the next block of the session skips the
process start and the unpickling, and values a snapshot cannot hold (a lambda,
a socket) live on while the process does. When the result is written the
worker says ``{"accepted": true}`` on fd W when it takes a block and
``{"code": n}`` when the block's result is written (n as the one-shot exit code would be).

With ``--confine SPEC`` the worker confines itself once, before serving (``confine.py``);
every block's result carries that report, and a block's own ``--confine`` is ignored. When
the spec requires confinement this machine cannot give, the worker exits with code 3 and
the reason on stderr, before reading any request.

The host is ``reference_agent.backends.warm``. The worker exits at EOF on fd R
(the host is gone) or after ``--idle-s`` seconds without a request. A block
stuck past its timeout ends the process, as it would end a one-shot run; the
host then starts a new one, which continues from the snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
from typing import Any

from .main import build_parser, run
from .namespace import LiveNamespace

DEFAULT_IDLE_S = 600.0


def _read_line(fd: int, pending: bytearray, idle_s: float) -> bytes | None:
    """The next request line; None at EOF or when no request came within ``idle_s``."""
    while b"\n" not in pending:
        ready, _, _ = select.select([fd], [], [], idle_s)
        if not ready:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line


EXIT_CONFINEMENT_UNAVAILABLE = 3


def _run_request(line: bytes, live: LiveNamespace, confinement: dict[str, Any] | None = None) -> int:
    try:
        argv = json.loads(line)
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError("a request is a JSON list of strings")
        args = build_parser().parse_args(argv)
    except (ValueError, SystemExit) as exc:  # argparse exits on bad arguments: a bad request, not a dead worker
        print(f"executor worker: bad request ({exc}): {line[:200]!r}", file=sys.stderr)
        return 2
    live.blocks += 1
    # As a one-shot run sees them: code may read its own arguments (the bridge address is one).
    sys.argv[1:] = argv
    return run(args, live, confinement=confinement)


def serve(request_fd: int, reply_fd: int, idle_s: float, confinement: dict[str, Any] | None = None) -> int:
    # Code run by the blocks must not inherit the control pipes (a `cat` child would eat requests).
    os.set_inheritable(request_fd, False)
    os.set_inheritable(reply_fd, False)
    live = LiveNamespace()
    pending = bytearray()
    while (line := _read_line(request_fd, pending, idle_s)) is not None:
        # Said before the block runs: a host that gets EOF instead knows the block never ran here
        # (the worker left while idle just as it was sent) and may send it to a new worker.
        try:
            os.write(reply_fd, b'{"accepted": true}\n')
        except OSError:  # the host is gone
            return 0
        code = _run_request(line, live, confinement)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.write(reply_fd, json.dumps({"code": code}).encode("utf-8") + b"\n")
        except OSError:  # the host is gone
            return 0
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_agent.executor.worker", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--request-fd", type=int, required=True, help="read requests (argv lists) from this fd")
    parser.add_argument("--reply-fd", type=int, required=True, help="write one {\"code\": n} line per request here")
    parser.add_argument("--idle-s", type=float, default=DEFAULT_IDLE_S, help="exit after this long without a request")
    parser.add_argument("--confine", metavar="SPEC", help="confine this process once, before serving: a JSON object "
                                                          "or @FILE (see confine.py)")
    args = parser.parse_args(argv)
    confinement = None
    if args.confine:
        from .confine import ConfinementUnavailable, InvalidConfinementSpec, apply_confinement, load_spec

        try:
            confinement = apply_confinement(load_spec(args.confine))
        except (ConfinementUnavailable, InvalidConfinementSpec) as exc:
            print(f"executor worker: {exc}", file=sys.stderr)
            return EXIT_CONFINEMENT_UNAVAILABLE if isinstance(exc, ConfinementUnavailable) else 2
    return serve(args.request_fd, args.reply_fd, args.idle_s, confinement)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: threads the blocks left running must not keep the worker alive.
    os._exit(code)
