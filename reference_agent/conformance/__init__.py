"""The reference agent as a target of rlm-conformance: the adapters the suite runs it through.

Registered like any user's package, by an entry point of the group ``rlm_conformance.targets``
(``pyproject.toml``): ``reference`` (the agent on its embedded defaults: DuckDB, local Job_B; ``reference.py``),
``legacy`` (the seeds' before-state, to prove the checks fail; ``legacy.py``), both built on ``common.py``; the
Databricks backend (``databricks.py``: a workspace, the harness's fake or a real one, or replay), its doctor
(``doctor/``) and the store ``audit`` reads (``audit_store.py``); the agent's profile (``profile.py``).
``plugin.py`` puts them together; nothing in ``harness/`` imports this package.
"""
