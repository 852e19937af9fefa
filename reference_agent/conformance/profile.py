"""The reference agent's target profile, as the agent ships it (``reference_agent/conformance_profile.yaml``)."""

from __future__ import annotations

import functools
from pathlib import Path

import reference_agent
from harness.targets.profile import TargetProfile, load_profile

PROFILE_PATH = Path(reference_agent.__file__).resolve().parent / "conformance_profile.yaml"


@functools.lru_cache(maxsize=1)
def reference_profile() -> TargetProfile:
    return load_profile(PROFILE_PATH)
