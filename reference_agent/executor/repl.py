"""The REPL namespace executed code sees: the RLM surface of seed 004 and the RLM paper.

``context``, ``llm_query``, ``llm_query_batched``, ``FINAL`` and ``FINAL_VAR``.
Only *calls* of FINAL/FINAL_VAR made by the running code set the answer: a
``print("FINAL(x)")`` is output, not an answer. As in the RLM reference REPL
(alexzhang13/rlm ``LocalREPL._restore_scaffold`` over ``RESERVED_TOOL_NAMES``),
the reserved names are put back after the block runs, so ``context = "x"`` or
``llm_query = None`` in one block cannot break the next.
"""

from __future__ import annotations

import time
from typing import Any

from .lm_client import LmClient

RESERVED_NAMES: tuple[str, ...] = ("context", "llm_query", "llm_query_batched", "FINAL", "FINAL_VAR")


class Repl:
    def __init__(self, *, context: Any = None, lm: LmClient | None = None,
                 namespace: dict[str, Any] | None = None) -> None:
        self.lm = lm if lm is not None else LmClient(None, max_calls=0)
        self.final_answer: str | None = None
        self.final_var: str | None = None
        self.final_error: str | None = None
        self._reserved: dict[str, Any] = {
            "context": context,
            "llm_query": self.llm_query,
            "llm_query_batched": self._timed_batch,
            "FINAL": self.FINAL,
            "FINAL_VAR": self.FINAL_VAR,
        }
        # A warm executor hands in the namespace its previous block left; otherwise a new one.
        self.namespace: dict[str, Any] = namespace if namespace is not None else {
            "__name__": "__main__", "__builtins__": __builtins__}
        self.namespace.update(self._reserved)

    # --- the surface executed code sees -------------------------------------------------

    def llm_query(self, prompt: str) -> str:
        """Ask the sub-LM one question; returns its text."""
        return self.lm.query([prompt], batched=False)[0]

    def llm_query_batched(self, prompts: list[str]) -> list[str]:
        """Ask many questions in one request, answered concurrently; answers in prompt order."""
        if isinstance(prompts, str):
            raise TypeError("llm_query_batched takes a list of prompts; use llm_query for a single prompt")
        return self.lm.query(list(prompts), batched=True)

    def _timed_batch(self, prompts: list[str]) -> list[str]:
        """``llm_query_batched`` as the code calls it, timed from outside: the result JSON's ``sublm_batches``
        then shows whether a batch took about its slowest answer (concurrent) or their sum."""
        started = time.perf_counter()
        try:
            return self.llm_query_batched(prompts)
        finally:
            size = len(prompts) if isinstance(prompts, (list, tuple)) else None
            self.lm.batches.append({"prompts": size, "wall_s": round(time.perf_counter() - started, 6)})

    def FINAL(self, answer: Any) -> str:  # noqa: N802 - the RLM name
        """Record ``str(answer)`` as the final answer (the last call wins)."""
        self.final_answer = str(answer)
        self.final_var = None
        self.final_error = None
        return self.final_answer

    def FINAL_VAR(self, name: Any) -> str:  # noqa: N802 - the RLM name
        """Record the value of the variable called ``name``; a missing name is reported, not raised."""
        if not isinstance(name, str):
            return self._final_problem(
                f"FINAL_VAR takes the variable's name as a string, e.g. FINAL_VAR('result'), "
                f"got a {type(name).__name__}; use FINAL(value) to answer with a value"
            )
        name = name.strip().strip('"').strip("'").strip()
        if name not in self.namespace:
            return self._final_problem(
                f"FINAL_VAR: variable '{name}' is not defined; define it in one block, "
                "then call FINAL_VAR in a later step"
            )
        self.final_answer = str(self.namespace[name])
        self.final_var = name
        self.final_error = None
        return self.final_answer

    def _final_problem(self, message: str) -> str:
        # Not an exception: the analyst's code keeps running and the message reaches the analyst.
        self.final_answer = None
        self.final_var = None
        self.final_error = message
        return message

    # --- running a block ---------------------------------------------------------------

    def run(self, code: str, filename: str) -> None:
        """Compile and run one block in the namespace; user exceptions propagate to the caller."""
        try:
            exec(compile(code, filename, "exec"), self.namespace)
        finally:
            self.restore_reserved()

    def restore_reserved(self) -> None:
        self.namespace.update(self._reserved)
