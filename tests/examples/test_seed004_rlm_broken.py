"""The broken variant's one defect, seen without the harness: stale flags cleared on the fetched session."""

from __future__ import annotations

from examples.seed004_rlm import keys
from examples.seed004_rlm_broken.agent import build_broken_root_agent
from tests.examples.conftest import run_agent
from tests.examples.test_seed004_rlm import SALES, TWO_TURNS


async def test_broken_variant_leaves_stale_flags_in_storage() -> None:
    run = await run_agent(build_broken_root_agent, app_name="seed004_rlm_broken", context=SALES,
                          turns=["Total?", "How many sales?"], max_iterations=2, script=TWO_TURNS)
    first_of_turn_2 = run.turns[1][0]
    assert first_of_turn_2.author == "context_loader"
    assert keys.FINAL_ANSWER not in first_of_turn_2.actions.state_delta, "the clear travels in no event"
    live, stored = run.probe.states[-1], (await run.stored_session()).state
    # The run acted on a cleared flag (the formatter saw no answer) ...
    assert live[keys.FINAL_ANSWER] is None
    assert "without a final answer" in run.llm.seen("result_formatter")[1].system_instruction
    # ... but the service still holds turn 1's answer: stored and live state differ.
    assert stored[keys.FINAL_ANSWER] == "The total is 200"
    assert {k for k in live if live[k] != stored.get(k)} == {keys.FINAL_ANSWER}
