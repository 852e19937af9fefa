"""The session-service contract suite, for any ``BaseSessionService``, as pytest tests.

Two ways in, both plain pytest (no plugin needed, tests are synchronous)::

    # 1. a test class per service
    from harness.contract import ServiceProfile, make_contract_tests
    TestMyService = make_contract_tests(ServiceProfile(name="mine", factory=lambda folder: MyService()))

    # 2. parametrize your own test over (profile, case)
    from harness.contract import contract_params, run_case_sync
    @pytest.mark.parametrize(("profile", "case"), contract_params([my_profile]))
    def test_contract(profile, case, tmp_path):
        run_case_sync(case, profile, tmp_path)

A divergence the profile declares for a case becomes ``xfail(strict=True,
raises=AssertionError)``: the case must keep failing the same way, and
whoever fixes the service must delete the declaration.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..targets.session_services import aclose_service
from .case import CASES, Case, CaseNotApplicable
from .profiles import ServiceProfile

for _module in ("cases_crud", "cases_events", "cases_concurrency", "cases_runners"):  # registers the cases, in this order
    importlib.import_module(f"{__package__}.{_module}")


def contract_cases() -> list[Case]:
    """Every contract case, in definition order."""
    return list(CASES.values())


async def run_case(case: Case, profile: ServiceProfile, folder: Path) -> None:
    """Build a fresh service from ``profile`` in ``folder``, run ``case`` on it, close it."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    service = profile.build(Path(folder))
    try:
        await case(service, profile)
    finally:
        await aclose_service(service)


def run_case_sync(case: Case, profile: ServiceProfile, folder: Path) -> None:
    """``run_case`` for a pytest test: a case that cannot judge the service skips, saying why."""
    try:
        asyncio.run(run_case(case, profile, folder))
    except CaseNotApplicable as why:
        import pytest

        pytest.skip(f"n/a: {why}")


def _marks(case: Case, profile: ServiceProfile) -> list[Any]:
    import pytest

    reason = profile.declared(case.name)
    if reason is None:
        return []
    return [pytest.mark.xfail(strict=True, raises=AssertionError,
                              reason=f"declared divergence of {profile.name} ({case.name}): {reason}")]


def contract_params(profiles: Iterable[ServiceProfile], cases: Iterable[Case] | None = None) -> list[Any]:
    """``pytest.param(profile, case)`` for every pair, declared divergences marked xfail(strict=True)."""
    import pytest

    case_list = list(cases) if cases is not None else contract_cases()
    return [pytest.param(profile, case, marks=_marks(case, profile), id=f"{profile.name}-{case.name}")
            for profile in profiles for case in case_list]


def make_contract_tests(profile: ServiceProfile, cases: Iterable[Case] | None = None) -> type:
    """A test class with one ``test_<case>`` per contract case, run on services built by ``profile``."""
    namespace: dict[str, Any] = {"__doc__": f"Session-service contract for {profile.name}."}
    for case in cases if cases is not None else contract_cases():
        def test(self: Any, tmp_path: Path, _case: Case = case) -> None:
            run_case_sync(_case, profile, tmp_path)

        test.__name__ = test.__qualname__ = f"test_{case.name}"
        test.__doc__ = case.description
        for mark in _marks(case, profile):
            test = mark(test)
        namespace[f"test_{case.name}"] = test
    return type("TestContract_" + re.sub(r"\W+", "_", profile.name), (), namespace)
