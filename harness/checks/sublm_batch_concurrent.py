"""``llm_query_batched`` answers its prompts concurrently: a batch takes about its slowest answer, not their sum."""

from __future__ import annotations

import json

from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped

NAME = "sublm_batch_concurrent"
BATCHED_CALL = "llm_query_batched("


def _code_calls_batched(ctx: CheckContext) -> bool:
    """Whether code the scenario's script delegates calls ``llm_query_batched`` (the scenario knows what it runs).

    The code is in the delegate tool's call arguments or, for a target that hands code over in an answer
    (``delegation_key``), in the analyst's text; any scripted step of an agent (not the sub-LM) holding it counts.
    """
    return any(BATCHED_CALL in json.dumps(step.model_dump(), default=str)
               for agent, steps in ctx.scenario.script.items() if agent != "sub_lm" for step in steps)


def _split_batches(ctx: CheckContext) -> list[str]:
    """Executions whose delegated code calls llm_query_batched but whose result reports no batch, only single calls."""
    problems = []
    for x in ctx.trace.executions:
        metrics = x.metrics if isinstance(x.metrics, dict) else {}
        # Judged only where the result counts batched calls (the reference's metrics): otherwise nothing to go on.
        if x.sublm_batches or x.sublm_calls < 2 or metrics.get("sublm_batched_calls", 1) != 0:
            continue
        problems.append(f"artifact {x.artifact_id} (session {x.session_id}, iteration {x.iteration}): the delegated "
                        f"code calls llm_query_batched, but the executor's result reports no llm_query_batched call "
                        f"(sublm_batches is empty) and {x.sublm_calls} single, unbatched sub-LM calls, "
                        f"{float(metrics.get('sublm_latency_s') or 0):.2f} s together: the batch was split into "
                        f"calls one after another")
    return problems


def _scripted_delays(ctx: CheckContext) -> list[float]:
    """How long each scripted sub-LM answer takes (``delay:`` of the scenario's ``sub_lm`` steps), positive only."""
    return sorted(d for step in ctx.scenario.script.get("sub_lm", ()) if (d := getattr(step, "delay", 0) or 0) > 0)


@check(
    NAME,
    title="llm_query_batched answers concurrently",
    why="The RLM paper's llm_query_batched sends its prompts at once: a batch of N slow sub-LM calls takes about "
        "the slowest call, not the sum. A bridge that answers them one after another still returns the right "
        "answers, just N times slower — and an RLM over a long context makes thousands of them. Judged on the "
        "wall time the executed code saw for each batch (the result JSON's sublm_batches) against the scenario's "
        "scripted answer delays (replay waits the recorded delays too). Code that calls llm_query_batched whose "
        "result reports no batch, only single sub-LM calls, had its batch split into calls one after another.",
    dod_item="004: llm_query_batched (concurrent sub-LM calls)",
)
def sublm_batch_concurrent(ctx: CheckContext) -> CheckResult:
    delays = _scripted_delays(ctx)
    batches = [(x, b) for x in ctx.trace.executions for b in x.sublm_batches
               if isinstance(b.get("prompts"), int) and b["prompts"] >= 2 and isinstance(b.get("wall_s"), (int, float))]
    if not delays:
        return not_applicable(NAME, "The scenario scripts no sub-LM answer with a delay: batch timing says nothing.")
    if not batches and _code_calls_batched(ctx) and (split := _split_batches(ctx)):
        return failed(NAME, f"{len(split)} execution(s) sent the code's llm_query_batched as single calls, one "
                            f"after another.", capped(split))
    if not batches:
        return not_applicable(NAME, "No execution made an llm_query_batched call of two or more prompts "
                                    "(or the target's result JSON has no sublm_batches).")
    judged, problems = [], []
    for execution, batch in batches:
        n = batch["prompts"]
        if len(delays) < n:
            continue
        slowest, queued = max(delays), sum(delays[:n])  # concurrent: about the slowest; one by one: at least this
        if queued < 1.5 * slowest:
            continue  # delays too uneven to tell the two apart
        threshold = (slowest + queued) / 2
        where = (f"artifact {execution.artifact_id} (session {execution.session_id}, iteration "
                 f"{execution.iteration})")
        line = (f"{where}: llm_query_batched of {n} prompts took {batch['wall_s']:.2f} s; concurrent is about the "
                f"slowest answer ({slowest:.2f} s), one after another at least {queued:.2f} s")
        (problems if batch["wall_s"] >= threshold else judged).append(line)
    if problems:
        return failed(NAME, f"{len(problems)} llm_query_batched call(s) took about the sum of their answers: the "
                            f"prompts were answered one after another.", capped(problems))
    if not judged:
        return not_applicable(NAME, "No batch had enough scripted delay to tell concurrent from sequential.")
    return passed(NAME, f"{len(judged)} llm_query_batched call(s) took about their slowest answer.", capped(judged))
