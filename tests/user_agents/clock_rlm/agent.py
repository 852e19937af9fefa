"""An agent whose prompts carry the time, as the upstream Databricks RLM agent's do (no harness import).

``analyst``'s instruction holds today's date and a run id stamped to the second from ``datetime.now(timezone.utc)``
(the upstream agent's ``local_{run_id}_iter{n}_{YYYYmmdd_HHMMSS}``), and the time its code's subprocess printed
last. Its tool ``run_code`` starts a Python subprocess that prints ``datetime.now()`` (naive: local time) and
keeps what it printed in state, with the tool's own time: the next prompt quotes both.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone

from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.apps import App
from google.adk.tools import ToolContext

CHILD = "import datetime; print(datetime.datetime.now().strftime('%Y-%m-%d %H:%M:%S'))"
# What the subprocess may see: enough to run Python (PYTHONPATH included, as a REPL worker's environment would).
PASSED_ENV = ("PATH", "HOME", "LANG", "PYTHONPATH")


def instruction(context: ReadonlyContext) -> str:
    iteration = int(context.state.get("iteration", 0))
    run_id = f"local_clock_iter{iteration}_{datetime.now(timezone.utc).strftime('%Y%m%d_%H%M%S')}"
    return (f"Today is {datetime.now():%A %d %B %Y}. Run id: {run_id}. The code last printed the time "
            f"{context.state.get('child_time', '(not run yet)')} (tool time {context.state.get('tool_time', '-')}). "
            f"Call run_code, then answer.")


def run_code(tool_context: ToolContext) -> dict:
    """Run the analysis code in a subprocess; returns the time it printed."""
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=60)
    tool_context.state["iteration"] = int(tool_context.state.get("iteration", 0)) + 1
    tool_context.state["child_time"] = done.stdout.strip() or done.stderr.strip()[-200:]
    tool_context.state["tool_time"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {"printed": tool_context.state["child_time"]}


analyst = LlmAgent(name="analyst", model="gemini-2.5-flash", instruction=instruction, tools=[run_code])
app = App(name="clock_rlm", root_agent=analyst)
