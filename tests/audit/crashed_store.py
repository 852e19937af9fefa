"""A reference-agent store as a crash leaves it: one turn run in a child process that is SIGKILLed right after
(or right before) an event of a given author is stored (e.g. after Job_B's event, before the summary)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_CHILD = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from reference_agent.models.scripted import Reply
    from reference_agent.run import run_conversation
    from reference_agent.sessions.delta_session_service import DeltaSessionService
    from reference_agent.testing import build_local_stack

    home, kill, author = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    counter = home / "volume" / "artifacts" / "executions.txt"  # one line per run of the code
    code = f"with open({str(counter)!r}, 'a') as f:\\n    f.write('ran\\\\n')\\nprint(6 * 7)\\n"
    script = {"databricks_analyst": [Reply(call="delegate_code_results",
                                           args={"code": code, "instruction": "report"}),
                                     Reply(call="exit_loop", args={})],
              "results_processor": [Reply(text="42")]}
    stack = build_local_stack(home, script=script, context={"x": 1})
    append = DeltaSessionService.append_event

    async def append_then_die(self, session, event):
        dies = event.author == author and bool(event.actions.state_delta)
        if dies and kill == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        stored = await append(self, session, event)
        if dies:
            os.kill(os.getpid(), signal.SIGKILL)
        return stored

    DeltaSessionService.append_event = append_then_die
    asyncio.run(run_conversation(stack.runner, user_id="u", session_id="crashed", message="what is 6 * 7?"))
""")


def executions(home: Path) -> int:
    """How many times the crashed turn's code ran (its side-effect counter in the volume)."""
    counter = home / "volume" / "artifacts" / "executions.txt"
    return counter.read_text().count("ran") if counter.exists() else 0


def crashed_store(home: Path, *, kill_after: str | None = None, kill_before: str | None = None) -> Path:
    """Run one turn in a child killed right after (or before) the first state-changing event of the author
    ``kill_after`` (``kill_before``) is stored; the DuckDB store's path."""
    home.mkdir(parents=True, exist_ok=True)
    kill, author = ("after", kill_after) if kill_after else ("before", kill_before)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(home), kill, str(author)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == -9, f"the child was not killed (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return home / "rlm.duckdb"
