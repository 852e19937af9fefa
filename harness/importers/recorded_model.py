"""An eval case's recorded model answers, served offline to ADK's own evaluator (``AgentEvaluator``, ``adk eval``).

ADK's evaluator runs the agent for real and calls its model live. To run an eval set with no key and no network,
``recorded_model(case, tree)`` serves that case's own model answers — the trajectory's model events, scripted
exactly as ``import evalset`` scripts them — from the suite's local Gemini-compatible endpoint
(``ScriptedEndpoint``), and points google-genai at it for the block (``GOOGLE_GEMINI_BASE_URL``, a dummy key),
with every non-loopback connection refused. The agents' tools run for real, so the evaluator judges what the
agent does with those answers: a correct agent reproduces the recorded trajectory, a broken one does not.

Answers are served per agent in order, so one case is served at a time: evaluate an eval set case by case.
What no eval set holds — the sub-model's answers to code that calls ``llm_query`` — comes from ``sub_lm``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import yaml

from ..environ import patched_environ
from ..llm.modes import API_KEY_VARIABLES, BASE_URL_VARIABLE, SCRIPTED_API_KEY
from ..scenario.script import SUB_LM
from .evalset import AgentTree, CaseRefused, EvalSetError, scenario_from_case, slug

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import EvalCase

    from ..llm.scripted_endpoint import ScriptedEndpoint


@contextlib.contextmanager
def recorded_model(case: EvalCase, tree: AgentTree, *,
                   sub_lm: list[dict[str, Any]] | None = None) -> Iterator[ScriptedEndpoint]:
    """Serve ``case``'s recorded model answers (and ``sub_lm``'s) on 127.0.0.1 while the block runs ADK's
    evaluator on that one case; the endpoint (its ``calls``, ``unserved()``) says what was asked."""
    from ..llm.network_guard import block_network
    from ..llm.scripted_endpoint import ScriptedEndpoint
    from ..scenario.loader import parse_scenario

    name = slug(case.eval_id)
    try:
        scenario = scenario_from_case(case, tree, source=f"eval case {case.eval_id!r}", name=name,
                                      exact_state=False, profile=None)
    except CaseRefused as exc:
        raise EvalSetError(f"eval case {case.eval_id!r}: its model answers cannot be served: {exc}") from None
    if sub_lm:
        scenario["script"][SUB_LM] = sub_lm
    script = parse_scenario(yaml.safe_dump(scenario, sort_keys=False), path=f"<eval case {case.eval_id}>",
                            stem=name).script
    environment = {BASE_URL_VARIABLE: None, **dict.fromkeys(API_KEY_VARIABLES), "GOOGLE_GENAI_USE_VERTEXAI": "false"}
    with ScriptedEndpoint(script) as endpoint, block_network():
        environment |= {BASE_URL_VARIABLE: endpoint.base_url, API_KEY_VARIABLES[0]: SCRIPTED_API_KEY}
        with patched_environ(environment):
            yield endpoint
