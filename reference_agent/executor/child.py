"""``python -m <package>.child ARGS``: the executor as Job_B's supervisor on Databricks starts it.

As ``python -m <package>`` (same arguments, same result JSON, ``os._exit`` at
the end so threads the code left running cannot keep Job_B alive), except for
``llm_query`` without a model: there is no LM bridge on a cluster, so the error
says what a Databricks run needs instead of "started without --lm-address".
"""

from __future__ import annotations

import os
import sys

from .lm_client import BudgetedLmClient, SubLmError
from .main import main as executor_main

NO_MODEL_MESSAGE = (
    "llm_query is not available in Job_B on Databricks without --lm-direct MODEL or --lm-exchange DIR: there is "
    "no LM bridge on the cluster, and this run was submitted without a model (the job runner was built without "
    "one). Direct mode also needs GOOGLE_API_KEY from the secret scope named by RLM_DATABRICKS_GENAI_SECRET. "
    "Answer from the data in `context` instead."
)


class NoModelLmClient(BudgetedLmClient):
    """``llm_query`` on Databricks when the run has no way to reach a model."""

    def _ready(self) -> None:
        raise SubLmError(NO_MODEL_MESSAGE)

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    return executor_main(argv, lm_fallback=NoModelLmClient)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
