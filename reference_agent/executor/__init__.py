"""Job_B: the executor that runs analyst-written Python with the RLM REPL surface.

Stdlib only, and nothing heavy imported here: the executor starts once per
code block, on this machine or on a Databricks cluster, and must start fast.
Run it as ``python -m reference_agent.executor --artifact-path P --run-id R --iteration N``.
"""
