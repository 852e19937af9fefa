"""``python -m <package>.child ARGS``: the executor as Job_B's supervisor on Databricks starts it.

As ``python -m <package>`` (same arguments, same result JSON, ``os._exit`` at
the end so threads the code left running cannot keep Job_B alive), except for

* ``llm_query`` without a model: the run was submitted without one, so the error
  says what a Databricks run needs instead of "started without --lm-address";
* ``--volume-mounts FOLDERS``: folders to treat as a volume's ``/Volumes`` mount
  (``files.py``), which the supervisor passes as an argument because this
  process's environment is an allow-list (the workspace fake maps ``/Volumes``
  to a local folder).
"""

from __future__ import annotations

import argparse
import os
import sys

from .files import declare_volume_mounts
from .lm_client import BudgetedLmClient, SubLmError
from .main import main as executor_main

NO_MODEL_MESSAGE = (
    "llm_query is not available in Job_B on Databricks without --lm-direct MODEL or --lm-exchange DIR: this run "
    "was submitted without a model (the job runner was built without one). Direct mode also needs GOOGLE_API_KEY "
    "for Job_B's supervisor, from the secret scope named by RLM_DATABRICKS_GENAI_SECRET. Answer from the data in "
    "`context` instead."
)


class NoModelLmClient(BudgetedLmClient):
    """``llm_query`` on Databricks when the run has no way to reach a model."""

    def _ready(self) -> None:
        raise SubLmError(NO_MODEL_MESSAGE)

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--volume-mounts", default="")
    known, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    declare_volume_mounts(known.volume_mounts)
    return executor_main(rest, lm_fallback=NoModelLmClient)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
