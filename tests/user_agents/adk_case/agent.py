"""A small ADK app as an `adk conformance` case would test it: one LlmAgent with a tool that writes state."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.tools import ToolContext


def add(a: int, b: int, tool_context: ToolContext) -> dict:
    """Add two numbers and remember the sum."""
    total = a + b
    tool_context.state["last_sum"] = total
    tool_context.state["sums"] = int(tool_context.state.get("sums", 0)) + 1
    return {"sum": total}


calculator = LlmAgent(name="calculator", model="gemini-2.5-flash", tools=[add], output_key="answer",
                      instruction="Add numbers with the add tool; the unit is {user:unit?}.")
app = App(name="adk_case", root_agent=calculator)
