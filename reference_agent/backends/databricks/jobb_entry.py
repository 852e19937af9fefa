"""Job_B on Databricks: the script a ``spark_python_task`` runs (uploaded to the volume as text).

It runs ``python -m reference_agent.executor``'s ``main`` with the task
parameters (``--artifact-path /Volumes/... --run-id ... --iteration ...
[--context-path ...]``); the volume is mounted at ``/Volumes`` on the compute,
so the executor reads the artifact and writes its result JSON beside it as on
a local disk.

``llm_query`` here: there is no ``--lm-address`` on a real workspace (nothing
on the cluster can reach the caller's LM bridge). The intended design is that
the executor calls the model itself with google-genai, ``GOOGLE_API_KEY``
coming from a secret scope (``RLM_DATABRICKS_GENAI_SECRET``). That direct
mode is not implemented in the executor yet, so this script installs an LM
client whose ``llm_query`` raises a clear error instead of the bridge's
"started without --lm-address".

Standalone on purpose: it imports only ``reference_agent`` (from the project
wheel installed on the compute) and the standard library.
"""

import sys


def _main(argv):
    try:
        from reference_agent.executor import main as executor_main
        from reference_agent.executor.lm_client import LmClient, SubLmError
    except ImportError as exc:
        raise SystemExit(
            f"Job_B cannot start: reference_agent is not importable on this compute ({exc}). Build the project "
            "wheel (python -m build --wheel), copy it to the volume and set RLM_DATABRICKS_WHEEL to its /Volumes path."
        ) from None

    class DirectModeLmClient(LmClient):
        """``llm_query`` on Databricks: direct mode (google-genai in Job_B) is not implemented yet."""

        def query(self, prompts, *, batched):
            raise SubLmError(
                "llm_query is not available in Job_B on Databricks yet: there is no LM bridge on the cluster, and "
                "the direct mode (google-genai in the executor, GOOGLE_API_KEY from the secret scope named by "
                "RLM_DATABRICKS_GENAI_SECRET) is not implemented. Answer from the data in `context` instead."
            )

    executor_main.LmClient = DirectModeLmClient
    code = executor_main.main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    _code = _main(sys.argv[1:])
    if _code:
        raise SystemExit(_code)
