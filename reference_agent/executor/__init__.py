"""Job_B: the executor that runs analyst-written Python with the RLM REPL surface.

Stdlib only, and nothing heavy imported here: the executor starts once per
code block on a Databricks cluster (and for a session's first block on this
machine, where ``worker.py`` then keeps it warm), and must start fast.
Run it as ``python -m reference_agent.executor --artifact-path P --run-id R --iteration N``.
Relative imports only: on Databricks the same files run as the payload package ``rlm_jobb``
(``reference_agent/backends/databricks/payload.py``), with ``supervisor.py`` as Job_B's entry.
"""
