"""What None in a state delta, and a stale writer's append, mean for the session service a run actually used.

ADK's own services store None (``State`` has no delete: the key stays, holding null); the reference agent's
``DeltaSessionService`` deletes the key. A profile may say which (``none_semantics: delete | store``); with
``auto`` (the default) the service decides: its own ``none_semantics`` attribute when it declares one, ADK's
contract (store) for ADK's classes, else what the service is *observed* to do (harness/contract/observe.py).
``stale_writes`` (reject | accept | auto) is settled the same way: the profile's word, the class's
``rejects_stale_writes`` attribute (a subclass of the reference's service inherits True), else observed; for
ADK's and the reference's own classes their contract profile declares it (harness/run/service_probe.py).
``semantics_origins`` says which of those answered, so a check's message names it.
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
    from ..contract.observe import observe_none_semantics, observe_rejects_stale_writes

    update: dict[str, str] = {}
    if profile.none_semantics == "auto":  # each observed only when nothing says it: one declared is enough for it
        update["none_semantics"] = service_none_semantics(service) if declared \
            else await observe_none_semantics(service)
    if profile.stale_writes == "auto":
        update["stale_writes"] = "reject" if await observe_rejects_stale_writes(service) else "accept"
    return profile.model_copy(update=update)


def semantics_origins(profile: TargetProfile, service: Any, *, observable: bool) -> dict[str, str]:
    """Where ``settle_service_semantics`` takes each answer from, for the checks' messages (issue 51: a message
    said "the profile says" where the service's class attribute had said it)."""
    name = type(service).__name__
    probed = observable and not is_known_service(service)
    none_attr, stale_attr = getattr(service, "none_semantics", None), getattr(service, "rejects_stale_writes", None)
    if profile.none_semantics != "auto":
        none = f"the target profile's none_semantics: {profile.none_semantics}"
    elif none_attr in ("delete", "store"):
        none = f"the service class's attribute {name}.none_semantics = {none_attr!r}"
    elif probed:
        none = f"a probe of {name} (None written to a key, then the session read back)"
    else:
        none = f"ADK's contract (None is stored) for {name}" + ("" if is_known_service(service) else
                                                                 ", not probed off the local backend")
    if profile.stale_writes != "auto":
        stale = f"the target profile's stale_writes: {profile.stale_writes}"
    elif isinstance(stale_attr, bool):
        stale = f"the service class's attribute {name}.rejects_stale_writes = {stale_attr}"
    elif probed:
        stale = f"a probe of {name} (two writers appending to one fetched session)"
    else:
        stale = f"the contract profile the harness declares for {name} (harness/contract/profiles.py)"
    return {"none_semantics": none, "stale_writes": stale}


async def settle_with_origins(profile: TargetProfile, service: Any, *,
                              observable: bool) -> tuple[TargetProfile, dict[str, str]]:
    """``settle_service_semantics`` and ``semantics_origins``, plus ``none_behaviour``: what the service itself does
    with None when that is known whatever the profile asks — its class attribute, ADK's contract for ADK's classes,
    or the probe. none_deletes reads it on a service read back by get_session, where an event's ``{key: None}``
    is a delete on a deleting service and a stored null on a storing one."""
    origins = semantics_origins(profile, service, observable=observable)
    settled = await settle_service_semantics(profile, service, observable=observable)
    declared = getattr(service, "none_semantics", None)
    if declared in ("delete", "store"):
        origins["none_behaviour"] = declared
    elif is_known_service(service):
        origins["none_behaviour"] = "store"  # ADK's State has no delete
    elif profile.none_semantics == "auto" and observable:
        origins["none_behaviour"] = settled.none_semantics  # observed
    return settled, origins
