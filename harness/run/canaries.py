"""Canary credentials in the host's environment while a scenario runs: code Job_B runs must never see them.

A deployment's host process holds the model key and the workspace token in its environment; the code the
analyst writes runs in Job_B and must get none of it (an allow-listed environment). To make a leak visible in
every run, the harness sets each variable below to a canary value for the run's duration (restored after), and
``executor_env_clean`` looks for their names and values in everything the executed code printed.

Only in replay and scripted mode on the local backend: the harness's own clients get their key explicitly,
so a canary changes nothing they send; live mode and a workspace need the real variables. On the databricks
backend's workspace fake with the scripted model, the ``GOOGLE_API_KEY`` Job_B is started with (what a cluster's
``spark_env_vars`` hold) is this module's canary value (``harness/targets/databricks.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..environ import patched_environ

CANARY_PREFIX = "rlm-conformance-canary"
CREDENTIAL_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "DATABRICKS_TOKEN",
                        "DATABRICKS_HOST", "DATABRICKS_CLIENT_SECRET", "AWS_SECRET_ACCESS_KEY")
"""Variables a deployment's host environment holds that executed code must not see."""


def canary_value(variable: str) -> str:
    return f"{CANARY_PREFIX}-{variable.lower().replace('_', '-')}"


@contextlib.contextmanager
def planted_credentials(variables: tuple[str, ...] = CREDENTIAL_VARIABLES) -> Iterator[list[str]]:
    """Set each variable to its canary value; restore the environment as it was afterwards."""
    with patched_environ({name: canary_value(name) for name in variables}):
        yield list(variables)
