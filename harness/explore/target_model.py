"""What ``explore`` knows of the target: its LlmAgents (those behind an ``AgentTool`` too), the tools each offers
with their parameter schemas, and the profile's roles (analyst, delegate tool and its code argument or delegation
key, exit tool, processor).

The target is built once, as ``init`` builds it (a placeholder model, nothing run), and closed again.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..targets.agent_tree import tool_agents, tree_agents
from ..targets.profile import TargetProfile

_CODE_ARG = re.compile(r"code|program|script|python|source", re.IGNORECASE)
DEFAULT_PREVIEW_CHARS = 2000


@dataclass(frozen=True)
class ToolModel:
    name: str
    schema: dict[str, Any]  # JSON Schema of the parameters ({} when the tool takes none)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.schema.get("required") or ())

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.schema.get("properties") or {})


@dataclass(frozen=True)
class AgentModel:
    name: str
    tools: tuple[ToolModel, ...] = ()
    transfers: tuple[str, ...] = ()  # agents it may hand the conversation to with transfer_to_agent
    via_tool: str | None = None  # the AgentTool that runs it (it answers once per call of that tool)
    code_delimiters: tuple[str, str] | None = None  # its ADK code executor's: how its answer carries code
    model_side: bool = False  # its code executor is the model's own (BuiltInCodeExecutor)

    def tool(self, name: str | None) -> ToolModel | None:
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True)
class TargetModel:
    spec: str
    profile: TargetProfile
    agents: tuple[AgentModel, ...]  # every LlmAgent a script may answer for
    analyst: str | None
    delegate_tool: str | None
    code_arg: str | None  # the delegate tool's argument holding the code
    delegation_key: str | None
    exit_tool: str | None
    preview_chars: int = DEFAULT_PREVIEW_CHARS
    notes: tuple[str, ...] = field(default=())
    loop_bound: int | None = None  # the target's own loop bound (None: no LoopAgent read, or an unbounded one)
    # Where every generated session starts (run.py: the profile's initial_state, a seed scenario's, keys explore
    # seeded past an obstruction): state, the users' questions, the context (None: the plan's sample).
    starting_state: dict[str, Any] = field(default_factory=dict)
    questions: tuple[str, ...] = ()
    context: Any = None
    code_delimiters: tuple[str, str] | None = None  # the analyst's ADK code executor runs code in these
    model_side: bool = False  # ... or the model runs it itself (BuiltInCodeExecutor)

    def agent(self, name: str | None) -> AgentModel | None:
        return next((a for a in self.agents if a.name == name), None)

    @property
    def delegates(self) -> bool:
        """Whether generated steps can hand code over (a delegate tool with a code argument, or a key)."""
        return ((self.delegate_tool is not None and self.code_arg is not None) or self.delegation_key is not None
                or self.code_delimiters is not None)

    @property
    def other_tools(self) -> tuple[ToolModel, ...]:
        """The analyst's tools besides the delegate tool (the exit tool included)."""
        analyst = self.agent(self.analyst)
        return tuple(t for t in (analyst.tools if analyst else ()) if t.name != self.delegate_tool)


def _schema(tool: Any) -> dict[str, Any]:
    """The JSON Schema of what the model is offered for ``tool``, as ADK declares it in a model request (the public
    ``LlmRequest.append_tools``, on both ADK lines; no private ``_get_declaration``)."""
    from google.adk.models.llm_request import LlmRequest

    request = LlmRequest()
    request.append_tools([tool])
    declaration = next((d for t in request.config.tools or () for d in t.function_declarations or ()
                        if d.name == tool.name), None)
    if declaration is None:
        return {}
    if getattr(declaration, "parameters_json_schema", None):
        return dict(declaration.parameters_json_schema)
    if declaration.parameters is not None:
        return _lower(declaration.parameters.model_dump(exclude_none=True, mode="json"))
    return {}


def _lower(schema: Any) -> Any:
    """google-genai's Schema dump (type: STRING ...) as JSON Schema (type: string ...)."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower(v) for v in schema]
    return schema


def _tools(agent: Any) -> tuple[ToolModel, ...]:
    from google.adk.tools import FunctionTool
    from google.adk.tools.base_tool import BaseTool

    out = []
    for tool in getattr(agent, "tools", None) or ():
        if not isinstance(tool, BaseTool):
            if not callable(tool):
                continue  # a toolset: its tools are known only when asked (async); not generated
            tool = FunctionTool(tool)
        try:
            schema = _schema(tool)
        except Exception:  # noqa: BLE001 - a tool ADK cannot declare is one the model is never offered
            continue
        out.append(ToolModel(name=tool.name, schema=schema))
    return tuple(out)


_DELEGATED_MODES = frozenset({"task", "single_turn"})  # ADK 2.x agents run as a task: never a transfer target


def _transfers(agent: Any) -> tuple[str, ...]:
    """Whom ``agent`` may transfer to, by ADK's rule (its auto flow offers ``transfer_to_agent`` for exactly these):
    its sub-agents and, when its parent is an LlmAgent, the parent and its other sub-agents unless ``agent``
    disallows them. Under a LoopAgent or SequentialAgent, no sibling: ADK 2.x refuses such a transfer."""
    from google.adk.agents import LlmAgent

    def open_to(other: Any) -> bool:
        return getattr(other, "mode", None) not in _DELEGATED_MODES

    names = [s.name for s in agent.sub_agents or () if open_to(s)]
    parent = agent.parent_agent
    if isinstance(parent, LlmAgent):
        if not agent.disallow_transfer_to_parent:
            names.append(parent.name)
        if not agent.disallow_transfer_to_peers:
            names += [p.name for p in parent.sub_agents if p.name != agent.name and open_to(p)]
    return tuple(dict.fromkeys(names))


def _llm_agents(root: Any) -> list[Any]:
    from google.adk.agents import LlmAgent

    seen, out, pending = set(), [], [root]
    while pending:
        agent = pending.pop(0)
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        if isinstance(agent, LlmAgent):
            out.append(agent)
        pending += [*(getattr(agent, "sub_agents", None) or ()), *tool_agents(agent)]
    return out


def _tool_names(root: Any) -> dict[str, str]:
    """Agent name -> the name of the AgentTool that runs it, for the agents of the tree wrapped as tools."""
    return {wrapped.name: tool.name for agent in tree_agents(root) for tool in getattr(agent, "tools", None) or ()
            if (wrapped := getattr(tool, "agent", None)) in tool_agents(agent)}


def code_executor_of(agent: Any) -> dict[str, Any]:
    """AgentModel's fields for an LlmAgent's ADK code executor (none: empty): the delimiters its answers put code in
    (its python ones when it has them, else its first), and whether the model runs the code itself."""
    from google.adk.code_executors import BaseCodeExecutor, BuiltInCodeExecutor

    executor = getattr(agent, "code_executor", None)
    if not isinstance(executor, BaseCodeExecutor):
        return {}
    delimiters = [tuple(d) for d in executor.code_block_delimiters] or [("```tool_code\n", "\n```")]
    chosen = next((d for d in delimiters if "python" in d[0]), delimiters[0])
    return {"code_delimiters": chosen, "model_side": isinstance(executor, BuiltInCodeExecutor)}


def _code_arg(tool: ToolModel | None) -> str | None:
    if tool is None:
        return None
    names = list(tool.properties) or list(tool.required)
    return next((n for n in names if _CODE_ARG.search(n)), None)


def describe_target(spec: str, profile: TargetProfile | None) -> TargetModel:
    """Build ``spec`` once and read its agents, tools and roles (``profile``: the user's, else the target's own)."""
    from google.adk.models.google_llm import Gemini

    from ..targets.base import TargetEnvironment
    from ..targets.registry import resolve_target

    async def no_sub_lm(prompt: str) -> str:  # never called: nothing runs here
        return ""

    with tempfile.TemporaryDirectory(prefix="rlm-explore-") as home:
        env = TargetEnvironment(model=Gemini(model="gemini-2.5-flash"), model_name="gemini-2.5-flash",
                                sub_lm=no_sub_lm, home=Path(home), max_iterations=None, profile=profile)
        built = resolve_target(spec)(env)
        try:
            via = _tool_names(built.app.root_agent)
            agents = tuple(AgentModel(name=a.name, tools=_tools(a), transfers=_transfers(a), via_tool=via.get(a.name),
                                          **code_executor_of(a))
                           for a in _llm_agents(built.app.root_agent))
            profile = profile or built.profile
            bound = loop_bound(built.app.root_agent, profile)
        finally:
            built.close()
            closer = getattr(built.session_service, "close", None)
            if inspect.iscoroutinefunction(closer):
                asyncio.run(closer())
    return replace(model_from(spec, profile, agents), loop_bound=bound)


def loop_bound(root: Any, profile: TargetProfile | None) -> int | None:
    """The target's own bound: the max_iterations of the profile's loop_agent (the first LoopAgent when it names
    none); None without one, or for an unbounded loop."""
    from google.adk.agents import LoopAgent

    from ..targets.generic import walk_agents

    loops = [a for a in walk_agents(root) if isinstance(a, LoopAgent)
             and (profile is None or profile.loop_agent in (None, a.name))]
    return loops[0].max_iterations if loops else None


def model_from(spec: str, profile: TargetProfile, agents: tuple[AgentModel, ...]) -> TargetModel:
    notes = []
    analyst = profile.analyst if profile.analyst in {a.name for a in agents} else None
    if analyst is None and agents:
        analyst = agents[0].name
        notes.append(f"the profile names no analyst among the LlmAgents: {analyst} (the first) writes the code")
    analyst_model = next((a for a in agents if a.name == analyst), None)
    delegate = analyst_model.tool(profile.delegate_tool) if analyst_model else None
    code_arg = _code_arg(delegate)
    if profile.delegate_tool and delegate is None:
        notes.append(f"{analyst} offers no tool {profile.delegate_tool!r} (the profile's delegate_tool): no code "
                     f"is delegated through it")
    elif delegate is not None and code_arg is None:
        notes.append(f"no argument of {delegate.name} looks like code: no code is delegated through it")
    delegation_key = profile.delegation_key if delegate is None else None
    exit_tool = profile.exit_tool if analyst_model and analyst_model.tool(profile.exit_tool) else None
    # An analyst with an ADK code executor, and no tool or key of the profile's: code travels in its answer.
    by_executor = analyst_model is not None and analyst_model.code_delimiters is not None and delegate is None \
        and delegation_key is None
    return TargetModel(spec=spec, profile=profile, agents=agents, analyst=analyst,
                       delegate_tool=delegate.name if delegate else None, code_arg=code_arg,
                       delegation_key=delegation_key, exit_tool=exit_tool,
                       preview_chars=profile.preview_chars or DEFAULT_PREVIEW_CHARS, notes=tuple(notes),
                       code_delimiters=analyst_model.code_delimiters if by_executor else None,
                       model_side=by_executor and analyst_model.model_side)
