"""State ADK itself keeps in ``session.state``: its own bookkeeping, not the agent's.

ADK's code-execution machinery (``CodeExecutorContext``, used whenever an ``LlmAgent`` has a ``code_executor``)
writes these keys into the live ``session.state`` directly, without an event: they are in memory, never in storage
(``_code_execution_context`` also travels in the delta of each code_execution_result event, and is written
without one whenever the model answers without code). Checks that compare memory with storage, or judge who may
write a key, look past them and say once that ADK wrote them; the agent's own keys are judged as ever.

The list is measured, not guessed: tests/harness/test_adk_owned_state.py runs a real code-executor LlmAgent on
the installed ADK line and asserts that these, and only these, are what ADK writes without an event.
"""

from __future__ import annotations

from collections.abc import Iterable

ADK_WRITES_WITHOUT_EVENT = frozenset({
    "_code_execution_context", "_code_executor_input_files", "_code_executor_error_counts",
    "_code_execution_results",
})


def is_adk_owned(key: str) -> bool:
    """Whether ``key`` is ADK's own bookkeeping (see the module docstring)."""
    return key in ADK_WRITES_WITHOUT_EVENT


def adk_note(keys: Iterable[str], *, how: str = "without an event") -> str:
    """One sentence for a verdict: which of ADK's keys were seen, and that they are ADK's (empty when none)."""
    seen = sorted(set(keys))
    if not seen:
        return ""
    return (f" ADK wrote {', '.join(repr(k) for k in seen)} {how} (its code executor's own bookkeeping, "
            f"CodeExecutorContext): ADK's, not the agent's, so not judged.")
