"""What None in a state delta means for the session service a run actually used.

ADK's own services store None (``State`` has no delete: the key stays, holding null); the reference agent's
``DeltaSessionService`` deletes the key. A profile may say which (``none_semantics: delete | store``); with
``auto`` (the default) the service decides: its own ``none_semantics`` attribute when it declares one, else
ADK's contract, store.
"""

from __future__ import annotations

from typing import Any

from .profile import TargetProfile


def service_none_semantics(service: Any) -> str:
    declared = getattr(service, "none_semantics", None)
    return declared if declared in ("delete", "store") else "store"


def with_none_semantics(profile: TargetProfile, service: Any) -> TargetProfile:
    if profile.none_semantics != "auto":
        return profile
    return profile.model_copy(update={"none_semantics": service_none_semantics(service)})
