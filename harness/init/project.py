"""``rlm-conformance init``: draft a project for a user's agent — a profile, a smoke scenario, the config table.

It imports the target (``--target module:attr``, resolved as ``run`` resolves it; a factory is called once),
walks its agent tree and writes into a folder:

* ``rlm-profile.yaml`` — a starting ``TargetProfile``: each field it could infer from a structural fact of the
  tree carries ``# inferred: <why>``, each it could not is present, null (or empty), with ``# TODO: <what>``;
* ``scenarios/smoke.yaml`` — one session, one turn, ``max_iterations: 1``, one plain text answer for each LlmAgent
  that runs without a delegation, so ``rlm-conformance run --llm-mode scripted`` is green on a correct agent;
* ``pyproject.toml`` — a ``[tool.rlm-conformance]`` table (target, profile, scenarios, cassettes, snapshots),
  added to an existing file without touching anything else in it.

Nothing is overwritten without ``--force``; every file is validated before any is written, and each is written
atomically (a temporary file renamed over the target), so a failure leaves no half-written file.

The heuristics (kept simple, and only called "inferred" when the tree says so):

* ``loop_agent``: the LoopAgent (the first in tree order when there are several, naming the others);
* ``analyst``: the LlmAgent of the loop with a tool whose name suggests handing code over or running it
  (delegat, exec, run_code, python, repl, sandbox, ...) or an ``output_key`` naming code; else the loop's first
  LlmAgent (said so); with no LoopAgent, the first LlmAgent of the tree with such a tool (its tool calls are the
  iterations);
* ``delegate_tool``: that tool; else ``delegation_key``: the analyst's ``output_key`` (``delegation_pattern`` is left
  to the user: whether a plain answer is handed to the executor is the agent's choice);
* ``job_builder``: the first agent after the analyst in the loop that is neither an LlmAgent nor a workflow agent;
* ``results_processor``: the first LlmAgent after the executor (with no executor: after the analyst, with an
  output_key); ``summary_key``: its ``output_key``;
* ``code_executor``: an LlmAgent whose ``code_executor`` is an ADK ``BaseCodeExecutor`` (any: built in, local,
  container, Vertex AI, GKE, a user's own): it is the analyst, ADK runs its code blocks (no delegate tool, key or
  executor agent), and the agent after it in the loop is the ``results_processor``; the smoke scripts one block in
  the executor's own delimiters (a model-side executor: the model's answer with the code and its result);
* with no such output_key, the summary from code (harness/init/roles.py): a key the analyst's instruction shows that
  an agent after it names in its code — the executor's (``summary_author``) or a later BaseAgent's
  (``results_processor``, digesting results in code);
* ``driver``: a function of the target's module whose parameters are the names the harness passes a driver;
* ``exit_tool``: ``exit_loop`` when an LlmAgent of the loop has it;
* ``pruning_plugins``: ``App.plugins`` whose class name mentions pruning (besides the default);
* ``app_tools``: tools whose source writes an ``app:`` key.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .. import files
from ..errors import HarnessError
from .roles import draft_driver, draft_summary_writer

PROFILE_FILE = "rlm-profile.yaml"
SCENARIOS_DIR = "scenarios"
SMOKE_FILE = "smoke.yaml"
PYPROJECT = "pyproject.toml"
TABLE = "rlm-conformance"
CONFIG_KEYS = ("target", "profile", "scenarios", "cassettes", "snapshots")

_DELEGATE_NAME = re.compile(r"delegat|exec|run_?(code|python|program|script)|python|repl|sandbox|interpret|"
                            r"eval_?code|code_?(run|exec)", re.IGNORECASE)
_CODE_KEY = re.compile(r"code|program|script|python", re.IGNORECASE)
_PRUNING = re.compile(r"prun", re.IGNORECASE)
_APP_KEY_WRITE = re.compile(r"""["']app:""")
NOT_NEEDED = "not needed"




class InitError(HarnessError):
    """``init`` cannot proceed: a target that does not load, files in the way, a pyproject it cannot extend."""


# --- the target --------------------------------------------------------------------------------------------------


def load_target_app(spec: str, *, allow_builtin: bool = False) -> Any:
    """The ADK App of ``spec`` (``module:attr``; a built-in name too with ``allow_builtin``), resolved as ``run``
    resolves it; a factory is called once."""
    import asyncio

    from google.adk.models.google_llm import Gemini

    from ..targets.base import TargetEnvironment
    from ..targets.plugins import plugins
    from ..targets.registry import resolve_target

    if spec in plugins() and not allow_builtin:
        raise InitError(f"--target {spec!r} is a target plugin's and ships its own profile; init drafts one for "
                        f"your agent: --target package.module:attr naming its ADK App, root agent or a zero-argument "
                        f"factory of either.")
    factory = resolve_target(spec)

    async def no_sub_lm(prompt: str) -> str:  # never called: nothing runs during init
        raise InitError("init does not run the agent")

    with tempfile.TemporaryDirectory(prefix="rlm-init-") as home:
        env = TargetEnvironment(model=Gemini(model="gemini-2.5-flash"), model_name="gemini-2.5-flash",
                                sub_lm=no_sub_lm, home=Path(home), max_iterations=1)
        built = factory(env)
        try:
            return built.app
        finally:
            built.close()  # puts back the models and max_iterations the harness set on the user's agents
            closer = getattr(built.session_service, "close", None)
            if inspect.iscoroutinefunction(closer):
                asyncio.run(closer())


def _tool_name(tool: Any) -> str | None:
    from google.adk.tools.base_tool import BaseTool

    if isinstance(tool, BaseTool):
        return tool.name
    if callable(tool):
        return getattr(tool, "__name__", None)
    return None  # a toolset: its tools are known only once it is asked (async); not guessed here


def _tools(agent: Any) -> list[tuple[str, Any]]:
    return [(name, tool) for tool in getattr(agent, "tools", None) or () if (name := _tool_name(tool))]


def _descendants(agent: Any) -> list[Any]:
    """Every agent under ``agent``: sub-agents and agents behind an AgentTool (harness/targets/agent_tree.py)."""
    from ..targets.agent_tree import tree_agents

    return tree_agents(agent)[1:]


def _is_llm(agent: Any) -> bool:
    from google.adk.agents import LlmAgent

    return isinstance(agent, LlmAgent)


def _is_workflow(agent: Any) -> bool:
    from google.adk.agents import LoopAgent, ParallelAgent, SequentialAgent

    return isinstance(agent, (LoopAgent, ParallelAgent, SequentialAgent))


def _writes_app_key(tool: Any) -> bool:
    """The tool's source spells an ``app:`` key, or its code uses a constant (or global) holding one."""
    fn = getattr(tool, "func", tool)  # FunctionTool keeps the function in .func
    code = getattr(fn, "__code__", None)
    if code is not None:
        names = [getattr(fn, "__globals__", {}).get(n) for n in code.co_names]
        if any(isinstance(v, str) and v.startswith("app:") for v in (*code.co_consts, *names)):
            return True
    try:
        return bool(_APP_KEY_WRITE.search(inspect.getsource(fn)))
    except (OSError, TypeError):
        return False


def scripted_agents(root: Any) -> list[Any]:
    """LlmAgents a turn reaches through workflow agents (not transfer targets, not AgentTools), in run order."""
    if _is_llm(root):
        return [root]
    if _is_workflow(root):
        return [a for child in root.sub_agents for a in scripted_agents(child)]
    return []


# --- the profile ---------------------------------------------------------------------------------------------------


@dataclass
class ProfileLine:
    """One line of the drafted profile: a value, and either why it was inferred or what to put there."""

    name: str
    value: Any
    inferred: str | None = None
    todo: str | None = None

    @property
    def comment(self) -> str:
        if self.inferred:
            return f"  # inferred: {self.inferred}"
        if self.todo and self.todo.startswith(NOT_NEEDED):
            return f"  # {self.todo}"
        return f"  # TODO: {self.todo}" if self.todo else ""

    @property
    def is_todo(self) -> bool:
        return bool(self.todo) and not self.inferred and not self.todo.startswith(NOT_NEEDED)


@dataclass
class Draft:
    spec: str
    fields: list[ProfileLine] = field(default_factory=list)
    smoke_agents: list[str] = field(default_factory=list)  # script keys of the smoke scenario
    unscripted: list[tuple[str, str]] = field(default_factory=list)  # (agent, why it is not scripted)
    agents: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    session_service: Any = None  # the drafted session-service line (harness/init/session_service.py)
    code_executor: Any = None  # the code_executor agent's ADK executor, when the tree has one

    def value(self, name: str) -> Any:
        return next((f.value for f in self.fields if f.name == name), None)

    def add(self, name: str, value: Any, *, inferred: str | None = None, todo: str | None = None) -> None:
        self.fields.append(ProfileLine(name, value, inferred if value not in (None, [], ()) else None,
                                  None if inferred and value not in (None, [], ()) else todo))


def infer_profile(spec: str, app: Any) -> Draft:
    """What the tree of ``app`` says about the profile's fields (see the module docstring for the rules).

    The fields are inferred role by role, in the order the profile lists them: the target, the loop, the analyst and
    how it delegates, the executor, the results processor, the summary writer and driver, the loop's tools, the
    pruning plugins, the keys only the user can name; then which agents the smoke scenario scripts, and notes."""
    from google.adk.agents import LoopAgent

    from ..targets.generic import walk_agents

    draft = Draft(spec=spec)
    root = app.root_agent
    everyone = walk_agents(root)
    draft.agents = [a.name for a in everyone]
    _infer_target(draft, spec, app)
    loops = [a for a in everyone if isinstance(a, LoopAgent)]
    loop = _infer_loop(draft, loops)
    members = list(loop.sub_agents) if loop else []
    llms = [a for a in (_descendants(loop) if loop else []) if _is_llm(a)]
    analyst = _infer_analyst(draft, loop, llms)
    after = members[members.index(_top_member(analyst, members)) + 1:] if analyst is not None else []
    executor = _infer_executor(draft, loop, analyst, after)
    processor = _infer_processor(draft, loop, analyst, executor, after)
    draft_summary_writer(draft, analyst, after, lambda a: not _is_llm(a) and not _is_workflow(a))
    draft_driver(draft, spec)
    _infer_tools(draft, everyone, llms)
    _infer_pruning_plugins(draft, app)
    _leave_user_keys(draft)
    _choose_smoke_agents(draft, root, app, processor)
    _note_tool_agents(draft, root)
    _infer_code_executor(draft, everyone)  # before the loop-less guess: a code executor is the surer sign
    _analyst_without_a_loop(draft, root)
    _note_other_loops(draft, loops, loop)
    return draft


def _infer_target(draft: Draft, spec: str, app: Any) -> None:
    """``name`` (the App's, or the root agent's when the target is a bare agent) and ``target`` (the spec itself)."""
    is_app_target = getattr(app, "name", None) and not _is_bare_agent(spec, app)
    draft.add("name", app.name,
              inferred="the App's name" if is_app_target else "the root agent's name (the target is an agent)",
              todo="a stable name for this target (cassettes/<name>/, snapshots/<name>/)")
    draft.add("target", spec, inferred="the --target init was given")


def _infer_loop(draft: Draft, loops: list[Any]) -> Any:
    """``loop_agent``: the first LoopAgent in tree order (None when the tree has none)."""
    loop = loops[0] if loops else None
    others = f"; the tree has {len(loops)} LoopAgents, the others: {', '.join(a.name for a in loops[1:])}" \
        if len(loops) > 1 else ""
    draft.add("loop_agent", loop.name if loop else None,
              inferred=("the only LoopAgent in the tree" if len(loops) == 1 else "the first LoopAgent in tree order"
                        + others + " — check"),
              todo="the LoopAgent that repeats analyst -> executor -> processor (the tree has none: null leaves "
                   "every LoopAgent to the harness)")
    return loop


def _infer_analyst(draft: Draft, loop: Any, llms: list[Any]) -> Any:
    """``analyst`` and how it hands code over: ``delegate_tool``, or ``delegation_key`` (+ ``delegation_pattern``)."""
    analyst, why_analyst, delegate = None, None, None
    for agent in llms:
        matched = [name for name, _ in _tools(agent) if name != "exit_loop" and _DELEGATE_NAME.search(name)]
        if matched:
            analyst, delegate = agent, matched[0]
            why_analyst = f"LlmAgent of {loop.name} with tool {matched[0]!r}, whose name suggests running code"
            break
        key = getattr(agent, "output_key", None)
        if key and _CODE_KEY.search(key):
            analyst = agent
            why_analyst = f"LlmAgent of {loop.name} whose output_key {key!r} names code"
            break
    if analyst is None and llms:
        analyst = llms[0]
        why_analyst = (f"the first LlmAgent of {loop.name}; no tool or output_key of the loop's LlmAgents looked "
                       "like code delegation — check")
    draft.add("analyst", analyst.name if analyst else None, inferred=why_analyst,
              todo="the LlmAgent that writes code")
    _infer_delegation(draft, analyst, delegate)
    return analyst


def _infer_delegation(draft: Draft, analyst: Any, delegate: str | None) -> None:
    """The analyst's delegate tool, else its output_key as the delegation key; the pattern is the user's to set."""
    draft.add("delegate_tool", delegate, inferred=f"tool of {analyst.name if analyst else '?'} whose name suggests "
                                                  "handing code over or running it",
              todo="the tool the analyst calls to hand code over (one call per delegation)"
              if not (analyst and analyst.output_key) else "not needed while delegation_key is set")
    key = analyst.output_key if analyst is not None and delegate is None else None
    draft.add("delegation_key", key, inferred=f"the output_key of {analyst.name if analyst else '?'} (it has no "
                                              "tool that looks like delegation)",
              todo="not needed while delegate_tool is set (the alternative: the state key whose write hands code "
                   "over)" if delegate else "the state key whose write hands code over (or set delegate_tool)")
    draft.add("delegation_pattern", None,
              todo="not needed while delegate_tool is set" if delegate else
              "with delegation_key: a regex only code matches (e.g. '```'), if the key also holds plain answers "
              "(an output_key does) — null: every value hands code over, and one the executor clears unrun is "
              "counted as declined")


def _infer_executor(draft: Draft, loop: Any, analyst: Any, after: list[Any]) -> Any:
    """``job_builder``: the first plain (not LLM, not workflow) agent after the analyst; else ``execution_key``."""
    executor = next((a for a in after if not _is_llm(a) and not _is_workflow(a)), None)
    draft.add("job_builder", executor.name if executor else None,
              inferred=f"the first agent after {analyst.name if analyst else '?'} in {loop.name if loop else '?'} "
                       f"that is not an LlmAgent ({type(executor).__name__})",
              todo="the agent that executes the code; if the delegate tool runs it itself, leave this null and set "
                   "execution_key")
    draft.add("execution_key", None, todo="a state key written once per execution, when no agent of its own "
                                          "executes the code (e.g. the delegate tool's output key)"
              if executor is None else "not needed while job_builder is set")
    return executor


def _infer_processor(draft: Draft, loop: Any, analyst: Any, executor: Any, after: list[Any]) -> Any:
    """``results_processor`` (the first LlmAgent after the executor, or after the analyst when there is no executor
    agent) and ``summary_key``, its output_key."""
    processor, why = None, None
    if executor is not None:
        rest = after[after.index(executor) + 1:]
        processor = next((a for a in rest if _is_llm(a)), None)
        why = f"the first LlmAgent after {executor.name} in {loop.name}"
    elif analyst is not None:
        processor = next((a for a in after if _is_llm(a) and a.output_key), None)
        why = f"the first LlmAgent with an output_key after {analyst.name} in {loop.name} (no executor agent)"
    draft.add("results_processor", processor.name if processor else None, inferred=why,
              todo="the LlmAgent that summarises an execution's results (null: none)")
    draft.add("summary_key", processor.output_key if processor is not None else None,
              inferred=f"the output_key of {processor.name if processor else '?'}",
              todo="the state key holding the durable summary that must reach the analyst's next prompt")
    return processor


def _infer_tools(draft: Draft, everyone: list[Any], llms: list[Any]) -> None:
    """``exit_tool`` (ADK's exit_loop on an LlmAgent of the loop) and ``app_tools`` (tools naming an app: key)."""
    has_exit = any(name == "exit_loop" for a in llms for name, _ in _tools(a))
    draft.add("exit_tool", "exit_loop" if has_exit else None,
              inferred="an LlmAgent of the loop has ADK's exit_loop tool",
              todo="the tool that ends the loop, if any")
    app_tools = sorted({name for a in everyone if _is_llm(a) for name, tool in _tools(a) if _writes_app_key(tool)})
    draft.add("app_tools", app_tools, inferred="their code names an 'app:' state key",
              todo="tools whose calls save app-wide data (app: keys), if any")


def _infer_pruning_plugins(draft: Draft, app: Any) -> None:
    """``pruning_plugins``: the default, plus App plugins whose class name mentions pruning."""
    plugins = [type(p).__name__ for p in getattr(app, "plugins", None) or ()]
    pruning = [name for name in plugins if _PRUNING.search(name)]
    listed = ", ".join(plugins) or "none"
    if pruning:
        draft.add("pruning_plugins", sorted({"RlmContextPruningPlugin", *pruning}),
                  inferred=f"App.plugins holds {', '.join(pruning)}, whose class name mentions pruning "
                           "(no_pruning_plugin fails while it is there)")
    else:
        draft.fields.append(ProfileLine("pruning_plugins", ["RlmContextPruningPlugin"], todo=(
            f"the default; add class names of plugins that clear state in bulk (App.plugins: {listed})")))


def _leave_user_keys(draft: Draft) -> None:
    """The fields no tree says anything about: left null, each with what to put there."""
    for name, todo in (("context_key", "the state key the scenario's context goes under (for code to read)"),
                       ("iteration_key", "the state key counting iterations, if any"),
                       ("final_answer_key", "where the final answer is stored"),
                       ("termination_key", "where the reason the loop ended is stored"),
                       ("run_conversation_author", "author of events your own driver appends outside the agents, "
                                                   "if any"),
                       ("history_key", "user: key holding the user's history across sessions (a list, newest last), "
                                       "if any"),
                       ("contract", "which author may write which key, as [{key: ..., writers: [...]}] (while null, "
                                    "the smoke scenario skips minimal_deltas)")):
        draft.add(name, None, todo=todo)


def _choose_smoke_agents(draft: Draft, root: Any, app: Any, processor: Any) -> None:
    """Which agents the smoke scenario scripts: every model-calling agent but a stage-gated results processor."""
    for agent in scripted_agents(root):
        gate = _gate(agent, app) if processor is not None and agent is processor else None
        if gate:
            draft.unscripted.append((agent.name, f"the results processor, gated by {gate}: with no code delegated "
                                                 "a stage-gated processor does not call its model (stage_gating)"))
        else:
            draft.smoke_agents.append(agent.name)
            if processor is not None and agent is processor:
                draft.notes.append(f"nothing in the tree gates {agent.name} (no _run_async_impl of its own, no "
                                   "agent/model callback, no plugin callback): it calls its model even when no code "
                                   "ran, which stage_gating reports; the smoke scenario scripts it so the run is "
                                   "judged rather than refused")


def _note_other_loops(draft: Draft, loops: list[Any], loop: Any) -> None:
    """LoopAgents outside the profile's loop: max_iterations does not reach them."""
    nested = [a.name for a in loops if a is not loop and a not in _descendants(loop)]
    if nested:
        draft.notes.append(f"LoopAgents besides {loop.name}: {', '.join(nested)}; the smoke scenario's "
                           "max_iterations applies to the profile's loop_agent only")


def _analyst_without_a_loop(draft: Draft, root: Any) -> None:
    """No LoopAgent: an LlmAgent's own tool calls are the iterations (model, tool, model again). The first LlmAgent
    of the tree with a tool whose name suggests running code is the analyst, that tool the delegate tool."""
    if draft.value("loop_agent") is not None or draft.value("analyst") is not None:
        return
    for agent in (a for a in [root, *_descendants(root)] if _is_llm(a)):
        matched = [name for name, _ in _tools(agent) if name != "exit_loop" and _DELEGATE_NAME.search(name)]
        if not matched:
            continue
        lines = {line.name: line for line in draft.fields}
        why = f"LlmAgent {agent.name} has tool {matched[0]!r}, whose name suggests running code (the tree has no " \
              "LoopAgent: its tool calls are the iterations)"
        lines["analyst"].value, lines["analyst"].inferred, lines["analyst"].todo = agent.name, why, None
        lines["delegate_tool"].value, lines["delegate_tool"].todo = matched[0], None
        lines["delegate_tool"].inferred = f"tool of {agent.name} whose name suggests handing code over or running it"
        for name in ("delegation_key", "delegation_pattern"):
            lines[name].todo = "not needed while delegate_tool is set"
        return


def _note_tool_agents(draft: Draft, root: Any) -> None:
    """An LlmAgent behind an AgentTool runs only when its caller's model calls that tool: the smoke scenario's plain
    answers never reach it (a step scripted for it would go unused), so it is named, not scripted."""
    from ..targets.agent_tree import tool_agents, tree_agents

    for caller in tree_agents(root):
        for agent in tool_agents(caller):
            if _is_llm(agent):
                draft.unscripted.append((agent.name, f"behind an AgentTool of {caller.name}, it runs only when "
                                                     f"{caller.name}'s model calls that tool"))


def code_executor_of(agent: Any) -> Any:
    """The agent's ADK code executor (any BaseCodeExecutor: built in, local, container, Vertex AI, GKE, ...)."""
    from google.adk.code_executors import BaseCodeExecutor

    executor = getattr(agent, "code_executor", None) if _is_llm(agent) else None
    return executor if isinstance(executor, BaseCodeExecutor) else None


def _infer_code_executor(draft: Draft, everyone: list[Any]) -> None:
    """An LlmAgent with ``code_executor`` runs its code through ADK, in its own answer: that agent is the analyst and
    ``code_executor``, and no tool, key or executor agent of the tree hands code over (those lines say so)."""
    agent = next((a for a in everyone if code_executor_of(a) is not None), None)
    if agent is None:
        draft.add("code_executor", None, todo="not needed: no LlmAgent of the tree has an ADK code_executor")
        return
    executor = code_executor_of(agent)
    side = ("the model runs it and answers with its results" if _is_model_side(executor) else
            f"ADK runs the code blocks of its answers ({', '.join(repr(lead.strip()) for lead, _ in executor.code_block_delimiters)} ...)")
    others = [a.name for a in everyone if a is not agent and code_executor_of(a) is not None]
    why = (f"{agent.name}'s code_executor is {type(executor).__name__}: {side}"
           + (f"; other LlmAgents with one: {', '.join(others)} — check" if others else ""))
    replaced = {"analyst": (agent.name, f"the LlmAgent with an ADK code_executor ({type(executor).__name__})", None),
                "job_builder": (None, None, "not needed while code_executor is set (ADK runs the code)"),
                "execution_key": (None, None, "not needed while code_executor is set"),
                "delegate_tool": (None, None, "not needed while code_executor is set"),
                "delegation_key": (None, None, "not needed while code_executor is set"),
                "delegation_pattern": (None, None, "not needed while code_executor is set")}
    for line in draft.fields:
        if line.name in replaced:
            line.value, line.inferred, line.todo = replaced[line.name]
    at = next((i for i, f in enumerate(draft.fields) if f.name == "execution_key"), len(draft.fields)) + 1
    draft.fields.insert(at, ProfileLine("code_executor", agent.name, inferred=why))
    draft.code_executor = executor
    line = next((f for f in draft.fields if f.name == "results_processor"), None)
    after = _next_member(agent)
    if line is not None and line.value is None and after is not None:
        line.value, line.todo = after.name, None
        line.inferred = (f"the agent after {agent.name} in {agent.parent_agent.name}: it handles the results ADK's "
                         f"executor gave {agent.name} ({type(after).__name__}"
                         + (", not an LlmAgent: processor_model_runs is n/a for it)" if not _is_llm(after) else ")"))


def _next_member(agent: Any) -> Any:
    """The sibling after ``agent`` (or after the member of its loop holding it) that is not a workflow agent."""
    from google.adk.agents import LoopAgent

    member = agent
    while member.parent_agent is not None and not isinstance(member.parent_agent, LoopAgent):
        member = member.parent_agent
    siblings = list(member.parent_agent.sub_agents) if member.parent_agent is not None else []
    rest = siblings[siblings.index(member) + 1:] if member in siblings else []
    return next((a for a in rest if not _is_workflow(a)), None)


def _is_model_side(executor: Any) -> bool:
    from google.adk.code_executors import BuiltInCodeExecutor

    return isinstance(executor, BuiltInCodeExecutor)


def _gate(agent: Any, app: Any) -> str | None:
    """What could keep ``agent``'s model from being called: its own ``_run_async_impl``, an agent or model
    callback, or a plugin's; None for a plain LlmAgent, which calls its model whenever it runs."""
    from google.adk.agents import LlmAgent
    from google.adk.plugins.base_plugin import BasePlugin

    if type(agent)._run_async_impl is not LlmAgent._run_async_impl:
        return f"{type(agent).__name__}._run_async_impl"
    for name in ("before_agent_callback", "before_model_callback"):
        if getattr(agent, name, None):
            return name
    # Any plugin overriding these may be the gate (or only log): which one returns early cannot be read from
    # the tree, so all are named rather than the first (a telemetry plugin is not a stage gate).
    hooks = [f"{type(plugin).__name__}.{name}" for plugin in getattr(app, "plugins", None) or ()
             for name in ("before_agent_callback", "before_model_callback")
             if getattr(type(plugin), name, None) is not getattr(BasePlugin, name)]
    if len(hooks) == 1:
        return f"plugin {hooks[0]}"
    return f"one of the plugin callbacks {', '.join(hooks)}" if hooks else None


def _is_bare_agent(spec: str, app: Any) -> bool:
    """Was the target an agent (the registry wrapped it in an App named after it)?"""
    import importlib

    from google.adk.agents.base_agent import BaseAgent

    module, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - resolve_target already imported it; this only picks a comment
        return False
    return isinstance(obj, BaseAgent)


def _top_member(agent: Any, members: list[Any]) -> Any:
    """The direct child of the loop that holds ``agent`` (the agent itself when it is one)."""
    for member in members:
        if member is agent or agent in _descendants(member):
            return member
    return agent


# --- rendering -------------------------------------------------------------------------------------------------------


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]*", value) and \
            yaml.safe_load(value) == value and ":" not in value:
        return value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _schema_ref(directory: Path, schema: Path) -> str:
    """``schema`` relative to ``directory`` when that climbs at most three folders, else absolute."""
    try:
        rel = Path(os.path.relpath(schema, directory.resolve()))
    except ValueError:  # another drive
        return schema.as_posix()
    return rel.as_posix() if rel.parts.count(os.pardir) <= 3 else schema.as_posix()


def render_profile(draft: Draft, directory: Path) -> str:
    from ..targets.profile_schema import SCHEMA_PATH

    inferred = sum(1 for f in draft.fields if f.inferred)
    todo = sum(1 for f in draft.fields if f.is_todo)
    lines = [f"# yaml-language-server: $schema={_schema_ref(directory, SCHEMA_PATH)}",
             f"# Target profile drafted by `rlm-conformance init --target {draft.spec}`: how this agent's layout maps",
             "# onto what the conformance checks reason about (fields: harness/targets/profile.py TargetProfile).",
             f"# {inferred} field(s) inferred from the agent tree ('# inferred: why'), {todo} left to you ('# TODO').",
             "# A check whose field stays null is n/a, never a false failure. Check the file with:",
             f"#   python -m harness.targets.profile_schema --check {PROFILE_FILE}",
             f"# Agents in the tree: {', '.join(draft.agents)}", ""]
    for f in draft.fields:
        lines.append(f"{f.name}: {_yaml_value(f.value)}{f.comment}")
    return "\n".join(lines) + "\n"


SMOKE_QUESTION = "Hello! This is a smoke test: please answer in one sentence."


def _delegation_step(draft: Draft) -> str:
    """How the analyst's script hands code over, in this agent's own terms (the smoke scenario's hint)."""
    if draft.value("delegate_tool"):
        return f"`- call: {draft.value('delegate_tool')}` with its `args:`"
    if draft.code_executor is not None:
        return f"a `- text:` answer with the code in {draft.value('code_executor')}'s code executor's delimiters"
    if draft.value("delegation_key"):
        pattern = draft.value("delegation_pattern")
        return (f"a `- text:` answer holding the code (written to {draft.value('delegation_key')!r}"
                + (f", matching delegation_pattern {pattern!r})" if pattern else ")"))
    return "`- call: <the tool that hands code over>` (map it as delegate_tool in the profile)"


SMOKE_CODE = 'print("smoke")'


def code_delimiters(executor: Any) -> tuple[str, str]:
    """The delimiters a model's code answer uses for ``executor``: its python one when it has one, else its first."""
    delimiters = list(executor.code_block_delimiters) or [("```tool_code\n", "\n```")]
    return next((d for d in delimiters if "python" in d[0]), delimiters[0])


def code_steps(draft: Draft, agent: str) -> list[str]:
    """The smoke script's code answer for the code_executor agent, before its closing text: a block in its
    executor's own delimiters (ADK runs it and asks the model again), or for a model-side executor the model's
    answer with the code and its result (what a cassette would hold)."""
    if draft.code_executor is None or agent != draft.value("code_executor"):
        return []
    if _is_model_side(draft.code_executor):
        response = {"candidates": [{"content": {"role": "model", "parts": [
            {"executableCode": {"language": "PYTHON", "code": SMOKE_CODE}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "smoke\n"}}]}, "finishReason": "STOP"}]}
        return ["    # the model runs the code itself (BuiltInCodeExecutor): its answer holds the result",
                f"    - response: {json.dumps(response)}"]
    lead, trail = code_delimiters(draft.code_executor)
    return [f"    # code in {type(draft.code_executor).__name__}'s own delimiters: ADK runs it, then asks again",
            f"    - text: {json.dumps(lead + SMOKE_CODE + trail)}"]


def render_smoke(draft: Draft, directory: Path) -> str:
    from ..scenario.schema import SCHEMA_PATH

    scenarios = directory / SCENARIOS_DIR
    local = scenarios / "scenario.schema.json"
    ref = "./scenario.schema.json" if local.is_file() else (
        _schema_ref(scenarios, SCHEMA_PATH) if SCHEMA_PATH.is_file() else None)
    analyst = draft.value("analyst")
    lines = [f"# yaml-language-server: $schema={ref}"] if ref else []
    code = draft.code_executor is not None
    lines += ["# A first scenario drafted by `rlm-conformance init`: one turn, one loop iteration, every LlmAgent",
              "# the turn reaches answers in plain text" + (f" ({draft.value('code_executor')} first runs one line "
                                                            "of code through ADK's code executor)" if code else
                                                            " (no code is delegated)")
              + ", so a correct agent runs it green",
              "# in scripted mode without a key. Copy it to script a delegation:",
              f"#   {_delegation_step(draft)}.",
              "name: smoke",
              "description: One turn, one loop iteration; each LlmAgent answers in plain text and no code is "
              "delegated." if not code else "description: One turn, one loop iteration; the code executor's agent "
              "runs one line of code, then each LlmAgent answers in plain text.",
              f"profile: ../{PROFILE_FILE}",
              "max_iterations: 1",
              "sessions:",
              "  - user: user_1",
              "    turns:",
              f"      - user: {json.dumps(SMOKE_QUESTION)}",
              "script:  # agent name -> its model's answers, in order"]
    for name in draft.smoke_agents:
        text = "Hello! No code is needed to answer this." if name == analyst else f"{name}: nothing to add."
        lines += [f"  {name}:", *code_steps(draft, name), f"    - text: {json.dumps(text)}"]
    lines += [f"  # note: {note}" for note in draft.notes if note.startswith("nothing in the tree gates")]
    for name, why in draft.unscripted:
        lines.append(f"  # {name}: not scripted — {why}; if your agent calls its model here, add a text step")
    if not draft.smoke_agents:
        lines.append("  {}  # the turn reaches no LlmAgent through workflow agents")
    return "\n".join(lines) + "\n"


# --- pyproject.toml --------------------------------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def config_table(spec: str, service: Any = None) -> dict[str, str]:
    values = {"target": spec, "profile": PROFILE_FILE, "scenarios": SCENARIOS_DIR, "cassettes": "cassettes",
              "snapshots": "snapshots"}
    return {**values, "session-service": service.spec} if service is not None and service.spec else values


def _table_text(values: dict[str, str], service: Any = None) -> str:
    """The table; the session-service line (or its commented example) last, with why."""
    lines = [f"{k} = {_toml_string(v)}\n" for k, v in values.items() if not (service and k == "session-service")]
    return f"[tool.{TABLE}]\n" + "".join(lines) + (f"{service.comment}\n" if service is not None else "")


_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*(?P<name>[^\]]+?)[ \t]*\]\]?[ \t]*(#.*)?$", re.MULTILINE)


def _header_name(raw: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"').strip("'") for part in raw.split("."))


def merged_pyproject(path: Path, spec: str, *, force: bool, service: Any = None) -> tuple[str, str]:
    """The new text of ``path`` with the ``[tool.rlm-conformance]`` table, and what was done ("created", "added",
    "replaced"). Everything else in an existing file is kept byte for byte; the result is checked with tomllib.
    ``service``: the drafted session-service line (harness/init/session_service.py)."""
    values = config_table(spec, service)
    table = _table_text(values, service)
    if not path.exists():
        return table, "created"
    try:
        original = path.read_bytes().decode("utf-8")
        data = tomllib.loads(original)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InitError(f"{path}: cannot read it as TOML ({exc}); nothing was written. Fix the file, or run init "
                        f"with --dir pointing elsewhere.") from None
    existing = data.get("tool", {}).get(TABLE) if isinstance(data.get("tool"), dict) else None
    if existing is not None and not force:
        raise InitError(f"{path} already has a [tool.{TABLE}] table; nothing was written. Re-run with --force to "
                        f"replace that table (the rest of the file is kept), or edit it by hand.")
    if existing is None:
        separator = "" if original == "" else ("\n" if original.endswith("\n") else "\n\n")
        text, action = original + separator + table, "added"
    else:
        headers = list(_HEADER.finditer(original))
        own = [m for m in headers if _header_name(m.group("name")) == ("tool", TABLE)]
        if len(own) != 1:
            raise InitError(f"{path} defines [tool.{TABLE}] in a form init does not rewrite (dotted keys or an "
                            f"inline table); nothing was written. Edit it by hand: {', '.join(values)}.")
        start = own[0].start()
        following = [m.start() for m in headers if m.start() > start]
        end = following[0] if following else len(original)
        body = original[start:end]
        kept_blank = body[len(body.rstrip("\n")) + 1:] if following else ""
        text, action = original[:start] + table + kept_blank + original[end:], "replaced"
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InitError(f"{path}: adding [tool.{TABLE}] would make it invalid TOML ({exc}); nothing was written. "
                        f"Add the table by hand:\n{table}") from None
    before = {k: v for k, v in data.items()}
    after = {k: v for k, v in parsed.items()}
    for doc in (before, after):
        if isinstance(doc.get("tool"), dict):
            doc["tool"] = {k: v for k, v in doc["tool"].items() if k != TABLE} or None
            if doc["tool"] is None:
                del doc["tool"]
    if parsed.get("tool", {}).get(TABLE) != values or before != after:
        raise InitError(f"{path}: init could not add [tool.{TABLE}] without changing something else; nothing was "
                        f"written. Add the table by hand:\n{table}")
    return text, action


# --- writing ---------------------------------------------------------------------------------------------------------


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder renamed over it: a file it replaces
    keeps its permissions, a new one gets what ``open()`` would give it (harness/files.py)."""
    files.write_atomic(path, text.encode("utf-8"), durable=True)


@dataclass
class InitResult:
    directory: Path
    written: list[tuple[Path, str]]  # (file, what was done)
    draft: Draft


def init_project(spec: str, directory: Path, *, force: bool = False,
                 writer: Callable[[Path, str], None] = write_atomic) -> InitResult:
    """Draft the three artifacts for ``spec`` into ``directory``; refuse to overwrite without ``force``."""
    from .session_service import draft_session_service
    from ..run.script_fit import agent_names, unknown_keys
    from ..scenario.loader import ScenarioError, parse_scenario
    from ..targets.profile import TargetProfile

    if ":" not in spec:
        from ..targets.registry import resolve_target

        resolve_target(spec)  # the registry's own message for a name that is not module:attr
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise InitError(f"--dir {directory}: is a file, not a folder.")
    profile_path = directory / PROFILE_FILE
    smoke_path = directory / SCENARIOS_DIR / SMOKE_FILE
    pyproject = directory / PYPROJECT
    in_the_way = [p for p in (profile_path, smoke_path) if p.exists()]
    table_exists = _has_table(pyproject)
    if (in_the_way or table_exists) and not force:
        what = [str(p) for p in in_the_way] + ([f"{pyproject} (its [tool.{TABLE}] table)"] if table_exists else [])
        raise InitError(f"these exist already: {', '.join(what)}; nothing was written. Re-run with --force to "
                        f"overwrite them (in {PYPROJECT} only the [tool.{TABLE}] table is replaced), or choose "
                        f"another folder with --dir.")

    app = load_target_app(spec)
    draft = infer_profile(spec, app)
    profile_text = render_profile(draft, directory)
    smoke_text = render_smoke(draft, directory)
    draft.session_service = draft_session_service(spec)
    pyproject_text, pyproject_action = merged_pyproject(pyproject, spec, force=force, service=draft.session_service)

    # Everything is checked before anything is written.
    TargetProfile.model_validate(yaml.safe_load(profile_text))
    try:
        scenario = parse_scenario(smoke_text, path=str(smoke_path), stem="smoke")
    except ScenarioError as exc:  # a bug of init, not of the user's agent: say so
        raise InitError(f"init drafted a scenario that does not load (please report it):\n{exc}") from None
    strays = unknown_keys(scenario, agent_names(app.root_agent))
    if strays:
        raise InitError(f"init drafted script keys that name no agent: {', '.join(strays)} (please report it)")

    plan = [(profile_path, profile_text, "overwritten" if profile_path.exists() else "created"),
            (smoke_path, smoke_text, "overwritten" if smoke_path.exists() else "created"),
            (pyproject, pyproject_text, pyproject_action)]
    written: list[tuple[Path, str]] = []
    for path, text, action in plan:
        writer(path, text)
        written.append((path, action))
    return InitResult(directory=directory, written=written, draft=draft)


def _has_table(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # merged_pyproject says what is wrong with it
    tool = data.get("tool")
    return isinstance(tool, dict) and TABLE in tool


def summary_lines(result: InitResult, prog: str = "rlm-conformance") -> list[str]:
    """What ``init`` prints: each file written, then the next commands."""
    draft = result.draft
    lines = ["Wrote:"]
    for path, action in result.written:
        what = {"created": "created", "overwritten": "overwritten (--force)", "added": f"[tool.{TABLE}] added",
                "replaced": f"[tool.{TABLE}] replaced (--force)"}[action]
        lines.append(f"  {path}  ({what})")
    inferred = [f.name for f in draft.fields if f.inferred]
    lines.append(f"Inferred from the agent tree: {', '.join(inferred) or 'nothing'}.")
    lines.append(f"Smoke scenario scripts: {', '.join(draft.smoke_agents) or '(no LlmAgent)'}"
                 + (f"; not scripted: {', '.join(name for name, _ in draft.unscripted)}" if draft.unscripted else "")
                 + ".")
    lines += [f"Note: {note}" for note in draft.notes]
    if draft.session_service is not None:
        service = draft.session_service
        lines.append(f"Session service: {service.spec} ({service.why})." if service.spec else
                     f"Session service: not set, left as a comment in {PYPROJECT} ({service.why}).")
    lines.append("Next:")
    lines += [f"  {n}. {step}" for n, step in enumerate(next_steps(result, prog), start=1)]
    return lines


def next_steps(result: InitResult, prog: str = "rlm-conformance") -> list[str]:
    """The commands to run next, from the folder the user is in."""
    directory = result.directory
    here = directory.resolve() == Path.cwd().resolve()
    flags = "" if here else (f" --scenarios-dir {directory / SCENARIOS_DIR} --cassette-dir "
                             f"{directory / 'cassettes'}")
    snap = "" if here else f" --snapshot-dir {directory / 'snapshots'}"
    todo = [f.name for f in result.draft.fields if f.is_todo]
    steps = []
    if todo:
        steps.append(f"fill in the TODO fields of {directory / PROFILE_FILE} ({', '.join(todo)}); check it with "
                     f"python -m harness.targets.profile_schema --check {directory / PROFILE_FILE}")
    steps += [f"{prog} run --llm-mode scripted --snapshot-update{flags}{snap}   # the smoke scenario against its "
              "script, no key needed; writes its first snapshot",
              f"{prog} record{flags}   # record its cassette (scripted endpoint)",
              f"{prog} run{flags}{snap}   # replay: the gate for CI"]
    return steps
