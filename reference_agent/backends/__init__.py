"""Storage and compute backends of the reference agent: one Protocol each, local and Databricks implementations."""
