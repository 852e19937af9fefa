"""``rlm-conformance doctor --databricks``: the workspace of the reference agent's Databricks backend, checked
before a recording (``run.run_databricks_doctor``): identity, warehouse, secret, catalog, schema, tables, volume,
compute and Job_B's payload, each a ``Finding`` with its fix."""
