"""What ``init`` reads off an agent's code, not only its tree: who writes the summary the analyst is shown, and the
team's own turn function (a profile ``driver``).

* The summary: the keys the analyst's instruction shows (``{key}`` / ``{key?}`` placeholders of a string
  instruction; the strings and string constants a provider's code uses) that the code of an agent after the
  analyst also names, with a name that says summary (summar, digest, result, finding, notes, insight, output). An
  LlmAgent's ``output_key`` is read by ``init_project`` itself; this covers a ``BaseAgent`` that writes the
  summary in code: the executor (then ``summary_author``) or an agent after it (then ``results_processor``).
* The driver: a function in the target's module (defined there or imported into it) whose required parameters
  are all names the harness passes (harness/targets/driver.py), among them ``runner`` and the message.
"""

from __future__ import annotations

import importlib
import inspect
import re
from types import CodeType
from typing import Any

_PLACEHOLDER = re.compile(r"\{\s*([A-Za-z_][\w:]*)\s*\??\s*\}")
_SUMMARY_NAME = re.compile(r"summar|digest|result|finding|notes?\b|insight|output", re.IGNORECASE)
_STATE_KEY = re.compile(r"^[A-Za-z_][\w:.-]*$")
_DRIVER_NAME = re.compile(r"run|turn|conversation|chat|ask|query", re.IGNORECASE)


def _code_strings(code: CodeType, namespace: dict[str, Any]) -> set[str]:
    """The strings a code object (and those nested in it) spells, and the string constants it reads (globals, or
    attributes of a module global)."""
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        for const in current.co_consts:
            if isinstance(const, str):
                found.add(const)
            elif isinstance(const, CodeType):
                stack.append(const)
        found.update(v for name in current.co_names if isinstance(v := namespace.get(name), str))
        # keys.SUMMARY: a constant read off a module the code names (co_names holds attribute names too)
        modules = [m for name in current.co_names if inspect.ismodule(m := namespace.get(name))]
        found.update(v for m in modules for name in current.co_names if isinstance(v := getattr(m, name, None), str))
    return found


def _functions(obj: Any) -> list[Any]:
    """``obj`` if it is a function, else the functions its class (and its own bases, ADK's aside) define."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return [getattr(obj, "__func__", obj)]
    found = []
    for cls in type(obj).__mro__:
        if cls is object or cls.__module__.startswith(("google.", "pydantic")):
            continue
        for value in vars(cls).values():
            value = getattr(value, "__func__", value)
            if inspect.isfunction(value):
                found.append(value)
    return found


def code_strings(obj: Any) -> set[str]:
    strings: set[str] = set()
    for fn in _functions(obj):
        strings |= _code_strings(fn.__code__, fn.__globals__)
    return strings


def shown_keys(agent: Any) -> set[str]:
    """The state keys ``agent``'s instruction shows: a string's placeholders, or the key-like strings of a provider."""
    instruction = getattr(agent, "instruction", None)
    if isinstance(instruction, str):
        return {m.group(1) for m in _PLACEHOLDER.finditer(instruction) if not m.group(1).startswith("artifact.")}
    if callable(instruction):
        return {s for s in code_strings(instruction) if _STATE_KEY.match(s)}
    return set()


def summary_writer(analyst: Any, after: list[Any], is_plain: Any) -> tuple[Any, str] | None:
    """The first agent of ``after`` (``is_plain``: neither an LlmAgent nor a workflow agent) whose code names a key
    the analyst is shown that is named like a summary, and that key; None when none does."""
    shown = shown_keys(analyst)
    for agent in after:
        if not is_plain(agent):
            continue
        keys = sorted(k for k in shown & code_strings(agent) if _SUMMARY_NAME.search(k))
        if keys:
            return agent, keys[0]
    return None


def draft_summary_writer(draft: Any, analyst: Any, after: list[Any], is_plain: Any) -> None:
    """Add ``summary_author`` to ``draft`` and, when an LlmAgent's output_key gave no summary, fill
    ``results_processor`` / ``summary_key`` (or ``summary_author``) from the agent whose code writes it."""
    found = summary_writer(analyst, after, is_plain) if analyst is not None and draft.value("summary_key") is None \
        else None
    author = None
    if found is not None:
        agent, key = found
        why = (f"the code of {agent.name} ({type(agent).__name__}) names {key!r}, which the instruction of "
               f"{analyst.name} shows")
        if agent.name == draft.value("job_builder"):
            author = agent.name
        elif draft.value("results_processor") is None:
            _set(draft, "results_processor", agent.name, f"{why}: it digests the results in code (a BaseAgent: "
                                                         f"processor_model_runs is n/a for it)")
        else:
            author = agent.name
        _set(draft, "summary_key", key, why)
    draft.add("summary_author", author, inferred=f"the summary {draft.value('summary_key')!r} is written by "
                                                 f"{author}'s code, not by a results processor's output_key",
              todo="not needed: the results_processor writes summary_key" if draft.value("results_processor")
              and draft.value("summary_key") else "who writes summary_key when no LlmAgent's output_key does (e.g. "
              "the executor, or a BaseAgent digesting results in code)")


def _set(draft: Any, name: str, value: Any, why: str) -> None:
    line = next(f for f in draft.fields if f.name == name)
    line.value, line.inferred, line.todo = value, why, None


def turn_functions(spec: str) -> list[tuple[str, Any]]:
    """``module:function`` and the function, for each function in the target's module whose parameters the
    harness can fill as a profile driver (harness/targets/driver.py), likeliest names first."""
    from ..targets.driver import ACCEPTED, CONTENT_NAMES, MESSAGE_NAMES

    module_name = spec.partition(":")[0]
    try:
        module = importlib.import_module(module_name)  # run/init imported it already: no new side effect
    except Exception:  # noqa: BLE001 - the target loaded; this only drafts a line
        return []
    found = []
    for name, fn in sorted(vars(module).items()):
        if not inspect.isfunction(fn) or fn.__module__.startswith(("google.", "harness.")) or name.startswith("_"):
            continue
        try:
            parameters = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            continue
        names = {p.name for p in parameters}
        required = {p.name for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL,
                                                                                           p.VAR_KEYWORD)}
        if "runner" in names and names & {*MESSAGE_NAMES, *CONTENT_NAMES} and required <= set(ACCEPTED):
            found.append((f"{module_name}:{name}", fn))
    return sorted(found, key=lambda item: not _DRIVER_NAME.search(item[0].partition(":")[2]))


def draft_driver(draft: Any, spec: str) -> None:
    """Add ``driver`` (and, with one, ``driver_outcome``) to ``draft``."""
    found = turn_functions(spec)
    chosen = found[0] if found else None
    others = f"; others that would fit: {', '.join(s for s, _ in found[1:])}" if len(found) > 1 else ""
    params = ", ".join(inspect.signature(chosen[1]).parameters) if chosen else ""
    draft.add("driver", chosen[0] if chosen else None,
              inferred=f"its parameters ({params}) are the names the harness passes a driver, so its returned "
                       f"outcome is what outcome_from_storage judges{others} — drop it if it is not your turn "
                       f"function",
              todo="your own turn function ('package.module:function'), if your team drives turns with one; "
                   "its parameters are bound by name: runner, user_id, session_id, message, ...")
    if chosen:
        draft.add("driver_outcome", {}, todo="what its result holds, e.g. {termination: status, final_answer: "
                                             "response_text} (unmapped fields are read under their own name)")
