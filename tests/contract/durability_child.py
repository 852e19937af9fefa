"""Child process for test_durability: appends events to a DuckDB-file session store until killed.

Prints "ACK <n>" (flushed) only after append_event(n) has returned, i.e. after the commit.
"""

from __future__ import annotations

import asyncio
import sys
import time

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from reference_agent.sessions.delta_session_service import DeltaSessionService


async def main(path: str) -> None:
    service = DeltaSessionService.duckdb(path)
    session = await service.create_session(app_name="durability", user_id="u", session_id="s")
    print("READY", flush=True)
    start, n = time.time() + 1, 0
    while True:
        event = Event(invocation_id="dur", author="writer", timestamp=start + n * 0.001,
                      content=types.Content(role="model", parts=[types.Part(text=f"e{n}")]),
                      actions=EventActions(state_delta={f"k{n}": n, "last": n, "user:last": n}))
        await service.append_event(session, event)
        print(f"ACK {n}", flush=True)
        n += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
