"""Session-service regression gate: a contract suite for any ADK ``BaseSessionService``.

* ``ServiceProfile``, ``BUILTIN_PROFILES``, ``get_profile``, ``profile_from_spec`` — services under test;
* ``DECLARED_DIVERGENCES`` — the one table of what built-in services do differently, and why;
* ``contract_cases``, ``make_contract_tests``, ``contract_params``, ``run_case`` — the contract suite (a case that
  cannot judge a service raises ``CaseNotApplicable``; the pytest paths skip with its reason).

Differential runs (every scenario on several services, compared) are ``harness.differential``'s: they run the runner.
"""

from __future__ import annotations

from .case import Case, CaseNotApplicable, contract_case
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
    "CaseNotApplicable",
    "ContractError",
    "ServiceProfile",
    "contract_case",
    "contract_cases",
    "contract_params",
    "get_profile",
    "make_contract_tests",
    "profile_from_spec",
    "run_case",
    "run_case_sync",
]
