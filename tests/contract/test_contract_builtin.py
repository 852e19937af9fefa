"""The session-service contract on the built-in services; declared divergences are strict xfails."""

from __future__ import annotations

import pytest

from harness.contract import (
    BUILTIN_PROFILES,
    DECLARED_DIVERGENCES,
    contract_cases,
    contract_params,
    run_case_sync,
)
from harness.contract.profiles import DIVERGENCE_KINDS


@pytest.mark.parametrize(("profile", "case"), contract_params(BUILTIN_PROFILES.values()))
def test_contract(profile, case, tmp_path):
    run_case_sync(case, profile, tmp_path)


def test_every_declared_divergence_names_a_real_case_or_kind():
    known = {case.name for case in contract_cases()} | set(DIVERGENCE_KINDS)
    for service, entries in DECLARED_DIVERGENCES.items():
        assert service in BUILTIN_PROFILES, f"DECLARED_DIVERGENCES names unknown service {service!r}"
        unknown = set(entries) - known
        assert not unknown, f"{service}: {sorted(unknown)} are neither contract cases nor divergence kinds"
        assert all(reason.strip() for reason in entries.values()), f"{service}: every divergence needs a reason"


def test_delta_declares_nothing():
    assert BUILTIN_PROFILES["delta"].divergences == {} and BUILTIN_PROFILES["delta"].none_semantics == "delete"
    assert BUILTIN_PROFILES["adk-memory"].none_semantics == "store"
    assert not BUILTIN_PROFILES["adk-memory"].detects_stale_writes and BUILTIN_PROFILES["adk-sqlite"].detects_stale_writes
