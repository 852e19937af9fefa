"""What a cassette was recorded *for*: the scenario, the target, and a hash of each part that shapes the traffic.

A cassette replays by URL and order, so one recorded for another scenario, or before the scenario's script
was edited, can replay "green" while it answers questions nobody asks any more. Every cassette therefore
carries ``metadata.scenario``::

    metadata:
      scenario:
        name: single_delegation
        target: reference
        parts: {inputs: 3f2a9c1e0b7d, profile: default, script: 91cc04d2a8e1}

and replay compares it with the scenario being run, naming each part that changed. ``inputs`` is what the
target is given (sessions, turns, initial state, context, limits, max_iterations); ``script`` is the model
script; ``profile`` the target profile passed with ``--profile`` (``default`` without one).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..scenario.models import Scenario
    from pydantic import BaseModel

METADATA_KEY = "scenario"
PART_MEANING = {
    "script": "the model script (`script:`)",
    "inputs": "the sessions, turns, initial state, context or limits",
    "profile": "the target profile (--profile)",
}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class CassetteIdentity:
    name: str
    target: str
    parts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, scenario: Scenario, *, target: str, profile: BaseModel | None) -> CassetteIdentity:
        """``profile``: the target profile the run used (any pydantic model; None: the target's default)."""
        # Defaults left out: a field a newer scenario schema adds (with its default) does not stale every cassette.
        dumped = scenario.model_dump(mode="json", exclude_defaults=True)
        inputs = {key: dumped.get(key) for key in ("sessions", "context", "limits", "max_iterations")}
        return cls(name=scenario.name, target=target, parts={
            "script": _digest(dumped.get("script")), "inputs": _digest(inputs),
            "profile": _digest(profile.model_dump(mode="json", exclude_defaults=True)) if profile is not None
            else "default"})

    def as_metadata(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target, "parts": dict(sorted(self.parts.items()))}

    def mismatch(self, recorded: Any) -> str | None:
        """Why a cassette whose ``metadata.scenario`` is ``recorded`` does not belong to this run; None if it does."""
        if not isinstance(recorded, dict):
            return ("carries no scenario identity (metadata.scenario): it was recorded by an older version of the "
                    "tool, or written by hand, so nothing says it belongs to this scenario")
        if recorded.get("name") != self.name:
            return f"was recorded for scenario {recorded.get('name')!r}, not {self.name!r}"
        if recorded.get("target") != self.target:
            return f"was recorded against target {recorded.get('target')!r}, not {self.target!r}"
        old = recorded.get("parts") if isinstance(recorded.get("parts"), dict) else {}
        changed = [PART_MEANING.get(part, part) for part in sorted(self.parts) if old.get(part) != self.parts[part]]
        if changed:
            return "was recorded before the scenario changed: " + "; ".join(changed) + " changed since recording"
        return None
