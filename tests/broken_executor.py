"""Job_B with one deliberate defect in the executor's REPL, for ``tests/broken_targets.py``.

``python broken_executor.py DEFECT [python flags] -m MODULE ARGS...`` patches the REPL with DEFECT, then runs
MODULE (``reference_agent.executor`` for a one-shot block, ``reference_agent.executor.worker`` for a warm
process) as ``python -m`` would. A broken target makes its job runner start this instead of Python itself
(``LocalJobRunner.python`` is a small shell script that calls it), so the defect lives in the executor process,
where the host cannot patch it.
"""

from __future__ import annotations

import runpy
import sys
from typing import Any

from reference_agent.executor.repl import Repl


def _one_by_one(self: Repl, prompts: list[str]) -> list[str]:
    """The batch's prompts sent one after another as single calls (still timed as one llm_query_batched)."""
    return [self.llm_query(p) for p in prompts]


def _untimed_one_by_one(self: Repl, prompts: list[str]) -> list[str]:
    """The same, bound where the code finds llm_query_batched: nothing times or records the batch."""
    return [self.llm_query(p) for p in prompts]


DEFECTS: dict[str, tuple[str, Any]] = {
    "batch_one_by_one": ("llm_query_batched", _one_by_one),
    "batch_one_by_one_untimed": ("_timed_batch", _untimed_one_by_one),
}


def main(argv: list[str]) -> None:
    defect, args = argv[0], argv[1:]
    name, replacement = DEFECTS[defect]
    setattr(Repl, name, replacement)
    while args and args[0] != "-m":  # the interpreter flags the runner passes (-s)
        args.pop(0)
    module = args[1]
    sys.argv = [module, *args[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
