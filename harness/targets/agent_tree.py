"""Every agent of a target's tree: sub-agents (under workflow agents too) and agents wrapped as tools.

ADK's ``AgentTool(agent)`` runs ``agent`` in a nested Runner of its own whenever the model of the agent holding
the tool calls it: that agent is in no ``sub_agents`` list, yet it calls a model and writes state (its events'
deltas reach the caller's). What walks the tree — the model the harness puts under each LlmAgent, what ``init``
lists and ``explore`` scripts — walks it here.
"""

from __future__ import annotations

from typing import Any


def tool_agents(agent: Any) -> list[Any]:
    """The agents ``agent``'s tools wrap (ADK's ``AgentTool`` and anything shaped like it: a tool with an ``agent``
    that has a name), in tool order."""
    from google.adk.agents.base_agent import BaseAgent

    return [tool.agent for tool in getattr(agent, "tools", None) or ()
            if isinstance(getattr(tool, "agent", None), BaseAgent)]


def tree_agents(root: Any) -> list[Any]:
    """``root`` and every agent under it, each once, depth first: an agent's sub-agents, then the agents its tools
    wrap."""
    out: list[Any] = []
    seen: set[int] = set()

    def visit(agent: Any) -> None:
        if id(agent) in seen:
            return
        seen.add(id(agent))
        out.append(agent)
        for child in [*(getattr(agent, "sub_agents", None) or ()), *tool_agents(agent)]:
            visit(child)

    visit(root)
    return out
