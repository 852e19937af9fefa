"""The model key on Databricks: Job_B's supervisor takes it and keeps it from the code it runs.

On a workspace ``GOOGLE_API_KEY`` reaches Job_B through the compute's environment
(``spark_env_vars`` from the secret scope named by ``RLM_DATABRICKS_GENAI_SECRET``).
The supervisor is the only process that may hold it: it answers ``llm_query`` for
the analyst's code over a loopback bridge (``model_bridge.py``) and starts that code
in a child whose environment is an allow-list. Before it starts anything it

* takes the key (and ``GOOGLE_GEMINI_BASE_URL``) out of ``os.environ``, so nothing
  it starts can inherit them and nothing in it reads them again;
* makes itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/<pid>/environ``
  — which still shows the environment it was started with — its memory, and
  ``ptrace`` are then closed to every process without ``CAP_SYS_PTRACE``, the
  child included (whose confinement drops every capability when it runs as root).

What this cannot reach: the other processes the platform started with the same
``spark_env_vars`` (the driver's JVM, ...). Only the child's Landlock rules keep it
from their ``/proc/<pid>/environ``; docs/databricks.md says where that is missing.
Standard library only: part of Job_B's payload.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass, field

API_KEY_VARIABLE = "GOOGLE_API_KEY"
BASE_URL_VARIABLE = "GOOGLE_GEMINI_BASE_URL"
SECRET_SETTING = "RLM_DATABRICKS_GENAI_SECRET"
MODEL_VARIABLES = (API_KEY_VARIABLE, BASE_URL_VARIABLE)
_PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class ModelCredential:
    """The model key and endpoint the supervisor's bridge calls with (the key is left out of ``repr``)."""

    api_key: str | None = field(repr=False)
    base_url: str | None = None


def take_model_credential(environ: MutableMapping[str, str] | None = None) -> ModelCredential:
    """The key and base URL from ``environ`` (``os.environ``), removed from it; ``api_key`` None when unset."""
    environ = os.environ if environ is None else environ
    key, base_url = (environ.pop(name, None) for name in MODEL_VARIABLES)
    return ModelCredential(api_key=key or None, base_url=base_url or None)


def seal_process() -> str | None:
    """Make this process non-dumpable; None when done, else why not (then its ``/proc`` entry stays readable)."""
    if not sys.platform.startswith("linux"):
        return f"no PR_SET_DUMPABLE on this platform ({sys.platform})"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(ctypes.c_int(_PR_SET_DUMPABLE), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            return f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as exc:
        return f"prctl is not reachable: {exc}"
    return None


def missing_key_message() -> str:
    """What ``llm_query`` says when the supervisor was given no key."""
    return (f"llm_query on Databricks needs {API_KEY_VARIABLE} in Job_B's environment (its supervisor holds it; "
            f"the analyst's code never does), and it is not set. It comes from a secret scope: set "
            f"{SECRET_SETTING}=scope/key (the secret holding the Gemini API key), which puts "
            f"{API_KEY_VARIABLE}={{{{secrets/scope/key}}}} in the cluster's spark_env_vars. Answer from the data in "
            "`context` until then.")
