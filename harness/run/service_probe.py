"""The session-service contract, run against the very service a conformance run used.

The scenarios drive one writer at a time through ``get_session()`` without filters, so a service with no
optimistic version check, one that ignores ``GetSessionConfig`` or returns events newest-first passes every
scenario. The contract suite (``harness/contract/``) has a case for each of those; here its cases run on the
run's own service instance — the target's, ``--session-service``'s or a user's factory's — after the
scenario's sessions, each case in its own app name so nothing of the scenario changes.

The defects are in the service's code, not in one scenario's data, and the suite takes about a second, so it
runs once per kind of service per process and every scenario's trace carries that record.

What a service declares about itself (None stored, stale writes accepted, ...) comes from its contract
profile (``harness/contract/profiles.py``): a declared divergence that happens is ``declared``, not a failure.
"""

from __future__ import annotations

import traceback
from dataclasses import replace
from collections.abc import Mapping
from typing import TYPE_CHECKING

from google.adk.sessions.base_session_service import BaseSessionService

from ..trace.model import ContractCaseRecord, ServiceProbeRecord

if TYPE_CHECKING:
    from ..contract.profiles import ServiceProfile
    from ..targets.profile import TargetProfile

_PROBED: dict[tuple[str, ...], ServiceProbeRecord] = {}
"""One probe per (service class, --session-service, backend, the semantics it is judged by) and process: see the
module docstring."""

_BY_CLASS = {"DeltaSessionService": "delta", "InMemorySessionService": "adk-memory",
             "DatabaseSessionService": "adk-sqlite"}


def service_profile(spec: str, service: BaseSessionService, target: TargetProfile,
                    origins: Mapping[str, str] | None = None) -> ServiceProfile:
    """The contract profile whose declarations apply: ``--session-service``'s own (a built-in name, or
    ``module:attr`` naming a ServiceProfile), else the service class's when the harness knows it (ADK's and the
    reference's, whoever built the instance), else what the target profile settled for it — its word, or what
    the service was observed to do (harness/run/service_semantics.py): never assumed."""
    from ..contract.profiles import BUILTIN_PROFILES, NONE_DELETES, STALE_WRITER_REJECTED, ServiceProfile
    from ..targets.plugins import known_service_modules
    from .service_semantics import is_known_service
    from ..targets.session_services import import_factory

    if spec != "delta" and spec in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[spec]
    if ":" in spec and isinstance(declared := import_factory(spec), ServiceProfile):
        return replace(declared, spawn=None)  # see _probe: no runner processes in a scenario run
    known = _BY_CLASS.get(type(service).__name__)
    if known is not None and is_known_service(service):
        return BUILTIN_PROFILES[known]
    name = f"{spec} ({type(service).__name__})" if ":" in spec else type(service).__name__
    origin = (origins or {}).get("stale_writes") or "the target profile's stale_writes, or what a probe of it observed"
    divergences = {STALE_WRITER_REJECTED: f"{type(service).__name__} accepts a stale writer's append (said by "
                                          f"{origin}); say stale_writes: reject in the target profile to require "
                                          f"rejection"} \
        if target.stale_writes == "accept" else {}
    # A subclass of ADK's class keeps what its base declares about the rest of the contract (e.g. ADK 1.x's
    # ValueError for SessionNotFoundError); None and stale writes are observed or said above.
    base = next((BUILTIN_PROFILES[_BY_CLASS[c.__name__]] for c in type(service).__mro__[1:]
                 if c.__name__ in _BY_CLASS and c.__module__.startswith(known_service_modules())), None)
    if base is not None:
        divergences = {**{k: v for k, v in base.divergences.items() if k not in (STALE_WRITER_REJECTED, NONE_DELETES)},
                       **divergences}
    none_semantics = target.none_semantics if target.none_semantics in ("delete", "store") else "store"
    return ServiceProfile(name=name, factory=lambda folder: service, none_semantics=none_semantics,
                          divergences=divergences, description=f"{name}, as observed or declared in the target profile",
                          supports_get_user_state=callable(getattr(service, "get_user_state", None)))  # ADK 1.x: none


async def probe_service(service: BaseSessionService, *, spec: str, backend: str, target: TargetProfile,
                        enabled: bool = True, share: str | None = None,
                        origins: Mapping[str, str] | None = None) -> ServiceProbeRecord:
    """Every contract case on ``service`` (cached per kind of service), or why it was not probed. ``share``: the
    folder the workers of one run share, so only one of them probes each kind (harness/run/probe_share.py)."""
    if not enabled:
        return ServiceProbeRecord(service=type(service).__name__, profile="-", skipped=(
            "this run did not probe its session service (RunOptions.probe_session_service is off: the differential "
            "mode compares what the services persisted and runs its own probes)"))
    name = f"{type(service).__module__}.{type(service).__qualname__}"
    # What it is judged against, and who said so (the messages name it).
    key = (name, spec, backend, target.none_semantics, target.stale_writes, (origins or {}).get("stale_writes", ""))
    if key in _PROBED:
        return _PROBED[key]
    if backend != "local":
        return ServiceProbeRecord(service=type(service).__name__, profile="-", skipped=(
            f"on the {backend} backend the service's SQL replays from the scenario's cassette, which holds only "
            f"the scenario's own statements; its contract is tested against the workspace fake in tests/databricks"))
    if share is None:
        record = await _probe(service, spec, target, origins)
    else:
        from .probe_share import shared_probe

        record = await shared_probe(share, tuple(map(str, key)), type(service).__name__,
                                    lambda: _probe(service, spec, target, origins))
    if not record.pending:  # pending: the record is still being written elsewhere; look again next time
        _PROBED[key] = record
    return record


async def _probe(service: BaseSessionService, spec: str, target: TargetProfile,
                 origins: Mapping[str, str] | None) -> ServiceProbeRecord:
    from ..contract.suite import contract_cases

    # No spawn words: the concurrent runners' case, which starts two processes building their own services (10 s
    # and more), says n/a here; the contract suite runs it (make_contract_tests(profile_from_spec(...))).
    profile = replace(service_profile(spec, service, target, origins), spawn=None)
    cases = []
    for case in contract_cases():
        cases.append(await _run_case(case, service, profile))
    return ServiceProbeRecord(service=type(service).__name__, profile=profile.name, cases=cases)


async def _run_case(case, service: BaseSessionService, profile: ServiceProfile) -> ContractCaseRecord:
    from ..contract.case import CaseNotApplicable

    declared = profile.declared(case.name)
    try:
        await case(service, profile)
    except CaseNotApplicable as why:
        return ContractCaseRecord(case=case.name, description=case.description, status="n/a", message=str(why))
    except AssertionError as exc:
        # The case's own message; under pytest, assertion rewriting appends an "assert ..." explanation.
        message = str(exc).split("\nassert ")[0].strip() or "assertion failed"
        if declared is not None:
            return ContractCaseRecord(case=case.name, description=case.description, status="declared",
                                      message=f"{declared} (observed: {message})")
        return ContractCaseRecord(case=case.name, description=case.description, status="fail", message=message)
    except Exception as exc:  # a service that raises is as broken as one that answers wrongly; keep where
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return ContractCaseRecord(case=case.name, description=case.description, status="fail",
                                  message=f"raised {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    if declared is not None:
        return ContractCaseRecord(case=case.name, description=case.description, status="fail", message=(
            f"the service's profile {profile.name!r} declares this case as a divergence ({declared}), but it "
            f"passes: delete the declaration"))
    return ContractCaseRecord(case=case.name, description=case.description, status="pass")
