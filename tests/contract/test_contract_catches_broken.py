"""Each deliberately broken service is caught by the contract case aimed at its bug, naming the key."""

from __future__ import annotations

import pytest

from harness.contract import (
    ServiceProfile,
    contract_cases,
    make_contract_tests,
    profile_from_spec,
    run_case,
)
from harness.contract.case import CaseNotApplicable
from harness.targets.session_services import SessionServiceError
from tests import broken_services

CASES = {case.name: case for case in contract_cases()}

BROKEN = [
    # (factory spec, the case that must catch it, what the message must name)
    ("tests.broken_services:temp_leak", "temp_not_persisted", "'temp:scratch'"),
    ("tests.broken_services:lost_update", "stale_writer_rejected", "'writer_a'"),
    ("tests.broken_services:null_storing", "none_semantics", "'cleared_key'"),
]


@pytest.mark.parametrize(("spec", "case_name", "named"), BROKEN, ids=[b[0].split(":")[1] for b in BROKEN])
async def test_broken_service_is_caught(spec, case_name, named, tmp_path):
    profile = profile_from_spec(spec)
    with pytest.raises(AssertionError) as caught:
        await run_case(CASES[case_name], profile, tmp_path)
    assert named in str(caught.value), f"{case_name} caught {spec} but its message does not name {named}: {caught.value}"


@pytest.mark.parametrize("spec", [b[0] for b in BROKEN], ids=[b[0].split(":")[1] for b in BROKEN])
async def test_broken_service_fails_only_its_own_case(spec, tmp_path):
    """The gate is precise: every other case passes on a service with one bug."""
    profile, target = profile_from_spec(spec), next(b[1] for b in BROKEN if b[0] == spec)
    failed = []
    for case in contract_cases():
        try:
            await run_case(case, profile, tmp_path / case.name)
        except AssertionError:
            failed.append(case.name)
        except CaseNotApplicable:  # concurrent_runners: an in-memory service no second process reaches
            pass
    assert failed == [target]


def test_factory_that_does_not_import_names_the_spec():
    with pytest.raises(SessionServiceError, match=r"'no_such_pkg\.mod:make'.*cannot import module 'no_such_pkg\.mod'"):
        profile_from_spec("no_such_pkg.mod:make")
    with pytest.raises(SessionServiceError, match=r"has no attribute 'nope'"):
        profile_from_spec("tests.broken_services:nope")


async def test_factory_returning_a_non_service_names_the_spec(tmp_path):
    profile = profile_from_spec("tests.broken_services:not_a_service")
    with pytest.raises(SessionServiceError, match=r"'tests\.broken_services:not_a_service' returned a dict, "
                                                       r"not a google\.adk BaseSessionService"):
        await run_case(CASES["event_order"], profile, tmp_path)


# The class form users copy (here with a divergence declared on purpose, to show the strict-xfail mechanics:
# test_none_semantics is reported as xfail, and would fail as XPASS once the service is fixed).
TestNullStoringDeclared = make_contract_tests(ServiceProfile(
    name="null-storing-declared",
    factory=lambda folder: broken_services.null_storing(),
    divergences={"none_semantics": "this broken service stores None; declared here to exercise xfail(strict)"},
), cases=[CASES["none_semantics"], CASES["event_order"]])


# A stale writer is judged by what was stored, not by the error's class (issue 51: a home-made service's own
# ValueError was a false alarm).
async def test_a_stale_writer_refused_with_the_services_own_error_is_a_rejection(tmp_path):
    await run_case(CASES["stale_writer_rejected"], profile_from_spec("tests.user_session_services:RejectingSessions"),
                   tmp_path)


@pytest.mark.parametrize(("spec", "named"), [
    ("tests.broken_services:stores_then_raises", "the refused stale append was stored anyway"),
    ("tests.broken_services:raises_and_breaks", "the session is unreadable after the stale append raised"),
    ("tests.broken_services:lost_update", "expected the stale writer's append to be refused"),
], ids=["stores_then_raises", "raises_and_breaks", "accepts"])
async def test_a_stale_writer_error_that_is_no_clean_rejection_fails_by_name(spec, named, tmp_path):
    with pytest.raises(AssertionError) as caught:
        await run_case(CASES["stale_writer_rejected"], profile_from_spec(spec), tmp_path)
    assert named in str(caught.value)
