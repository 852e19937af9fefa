"""Session-service regression gate: a contract suite for any ADK ``BaseSessionService`` and differential runs.

* ``ServiceProfile``, ``BUILTIN_PROFILES``, ``get_profile``, ``profile_from_spec`` — services under test;
* ``DECLARED_DIVERGENCES`` — the one table of what built-in services do differently, and why;
* ``contract_cases``, ``make_contract_tests``, ``contract_params``, ``run_case`` — the contract suite;
* ``run_differential``, ``render_differential_markdown`` — every scenario on several services, compared
  (imported lazily: it pulls in the runner).
"""

from __future__ import annotations

from typing import Any

from .case import Case, contract_case
from .profiles import (
    BUILTIN_PROFILES,
    DECLARED_DIVERGENCES,
    ContractError,
    ServiceProfile,
    get_profile,
    profile_from_spec,
)
from .suite import (
    contract_cases,
    contract_params,
    make_contract_tests,
    run_case,
    run_case_sync,
)

__all__ = [
    "BUILTIN_PROFILES",
    "DECLARED_DIVERGENCES",
    "Case",
    "ContractError",
    "Difference",
    "DifferentialReport",
    "ServiceProfile",
    "contract_case",
    "contract_cases",
    "contract_params",
    "get_profile",
    "make_contract_tests",
    "profile_from_spec",
    "render_differential_markdown",
    "run_case",
    "run_case_sync",
    "run_differential",
]

_LAZY = {"Difference", "DifferentialReport", "run_differential", "render_differential_markdown"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import differential

        return getattr(differential, name)
    raise AttributeError(f"module 'harness.contract' has no attribute {name!r}")
