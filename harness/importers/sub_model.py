"""The sub-model's answers no ADK format holds: named where the material is turned into a scenario, supplied from
a file (``--sub-lm FILE``).

Code an RLM agent executes asks a sub-model (``llm_query`` / ``llm_query_batched``) from the executor, outside the
agents' events, so neither an eval set nor a stored session records those calls. ``import evalset`` and
``capture`` both find the scripted answers whose code makes such a call, and either add the answers given in a
file (the script's ``sub_lm`` key) or say, in a note, how to give them: without them the scripted run stops at the
first such call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ..errors import HarnessError
from ..scenario.script import SUB_LM

SUB_MODEL_CALL = re.compile(r"\bllm_query(?:_batched)?\s*\(")
"""Code that asks the sub-model: its answers come from the executor, not from any recorded event."""

Answers = dict[str | None, list[dict[str, Any]]]
"""Per scenario name or case id (None: every case) the sub-model's answers, as script steps."""


class SubModelAnswersError(HarnessError):
    """A file of sub-model answers that cannot be read; the message names the file, the entry and the fix."""


def sub_model_callers(script: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The scripted answers (``agent[step]``) whose code calls ``llm_query``/``llm_query_batched``."""
    def strings(value: Any) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    return [f"{agent}[{number}]" for agent, steps in script.items() for number, step in enumerate(steps)
            if any(SUB_MODEL_CALL.search(text) for text in strings(step))]


def load_sub_model_answers(path: Path) -> Answers:
    """A file of sub-model answers: a YAML list (for every case whose code asks the sub-model), or a mapping of
    scenario name or eval id -> list; each answer a text, or a script step (``{text: ..., when: ...}``)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SubModelAnswersError(f"{path}: cannot read the sub-model answers ({exc}). Fix: a YAML list of "
                                   f"answers, or a mapping of case name -> list.") from None
    by_case = {None: data} if isinstance(data, list) else data
    if not isinstance(by_case, dict) or not all(isinstance(v, list) for v in by_case.values()):
        raise SubModelAnswersError(f"{path}: sub-model answers are a YAML list (every case) or a mapping of "
                                   f"scenario name or eval id -> list, got {type(data).__name__}. Fix: e.g. "
                                   f"`- positive` lines, or `my_case: [positive, negative]`.")
    steps: Answers = {}
    for case, answers in by_case.items():
        for number, answer in enumerate(answers):
            if not isinstance(answer, (str, dict)):
                raise SubModelAnswersError(f"{path}: {case or 'the list'}[{number}]: an answer is a text or a "
                                           f"script step ({{text: ..., when: ...}}), got {answer!r}. Fix: quote "
                                           f"it as text.")
        steps[None if case is None else str(case)] = [a if isinstance(a, dict) else {"text": a} for a in answers]
    return steps


def with_sub_model_answers(scenario: dict[str, Any], *, ids: Iterable[str], answers: Answers | None,
                           answers_file: Path | None, held_by: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``scenario`` with the sub-model's answers its code needs, from ``answers`` (looked up by each of ``ids``,
    then the list for every case), and the note saying so — or unchanged, with a note saying how to give them
    (``held_by``: what did not hold them, e.g. "no eval set"). No note when no code asks the sub-model."""
    callers = sub_model_callers(scenario["script"])
    if not callers:
        return scenario, ()
    known = answers or {}
    mine = next((known[i] for i in ids if i in known), known.get(None))
    if mine is not None:
        return ({**scenario, "script": {**scenario["script"], SUB_LM: mine}},
                (f"the code of {', '.join(callers)} asks the sub-model: {len(mine)} answer(s) from {answers_file}",))
    name = scenario["name"]
    return scenario, (
        f"the code of {', '.join(callers)} calls llm_query/llm_query_batched, whose answers {held_by} holds: the "
        f"run stops at the first such call. Fix: give them with --sub-lm FILE (a YAML list of answers, or "
        f"{name}: [answer, ...]), or record the scenario against a live model (rlm-conformance record "
        f"--llm-mode live --scenario {name})",)
