"""What None in a state delta, and a stale writer's append, mean for the session service a run actually used.

ADK's own services store None (``State`` has no delete: the key stays, holding null); the reference agent's
``DeltaSessionService`` deletes the key. A profile may say which (``none_semantics: delete | store``); with
``auto`` (the default) the service decides: its own ``none_semantics`` attribute when it declares one, ADK's
contract (store) for ADK's classes, else what the service is *observed* to do (harness/contract/observe.py).
``stale_writes`` (reject | accept | auto) is settled the same way: the profile's word, the class's
``rejects_stale_writes`` attribute (a subclass of the reference's service inherits True), else observed; for
ADK's and the reference's own classes their contract profile declares it (harness/service_probe.py).
"""

from __future__ import annotations

from typing import Any

from .profile import TargetProfile

_KNOWN_MODULES = ("google.adk.", "reference_agent.")


def is_known_service(service: Any) -> bool:
    """ADK's services and the reference's: their behaviour is declared, not observed."""
    return type(service).__module__.startswith(_KNOWN_MODULES)


def service_none_semantics(service: Any) -> str:
    declared = getattr(service, "none_semantics", None)
    return declared if declared in ("delete", "store") else "store"


def with_none_semantics(profile: TargetProfile, service: Any) -> TargetProfile:
    if profile.none_semantics != "auto":
        return profile
    return profile.model_copy(update={"none_semantics": service_none_semantics(service)})


async def settle_service_semantics(profile: TargetProfile, service: Any, *, observable: bool) -> TargetProfile:
    """``profile`` with none_semantics and stale_writes settled for ``service``: the profile's word, the service's
    declaration, else (``observable``: a local run, whose service can take a few writes of its own) observed."""
    declared = getattr(service, "none_semantics", None) in ("delete", "store")
    declared_stale = getattr(service, "rejects_stale_writes", None)
    if profile.stale_writes == "auto" and isinstance(declared_stale, bool):  # a class's word (and its subclasses')
        profile = profile.model_copy(update={"stale_writes": "reject" if declared_stale else "accept"})
    unknown = observable and not is_known_service(service) and (
        (profile.none_semantics == "auto" and not declared) or profile.stale_writes == "auto")
    if not unknown:
        return with_none_semantics(profile, service)
    from ..contract.observe import observe

    seen = await observe(service)
    update: dict[str, str] = {}
    if profile.none_semantics == "auto":
        update["none_semantics"] = service_none_semantics(service) if declared else seen.none_semantics
    if profile.stale_writes == "auto":
        update["stale_writes"] = "reject" if seen.rejects_stale_writes else "accept"
    return profile.model_copy(update=update)
