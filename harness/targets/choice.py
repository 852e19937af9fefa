"""Which target a scenario runs against, under which stable name, with which profile.

One decision, shared by the runner, the CLI and the pytest plugin (cassette and snapshot folders, the commands
they print): the command line's ``--target`` / ``--profile`` win over the scenario's ``target:`` / ``profile:``,
which win over the project's default profile (``[tool.rlm-conformance] profile``, ``rlm_profile``) and the
profile's own ``target:``; the default is the reference agent. The name is the profile's
``name`` — stable when the import path moves — else the spec made folder-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..recording.layout import DEFAULT_TARGET, target_name
from .profile import TargetProfile, load_profile

if TYPE_CHECKING:
    from ..scenario.models import Scenario

REFERENCE = DEFAULT_TARGET


@dataclass(frozen=True)
class TargetChoice:
    spec: str  # what resolve_target imports: reference, legacy or module:attr
    name: str  # cassettes/<name>/, snapshots/<name>/ (the reference agent's sit at the top)
    profile: TargetProfile | None = None  # the user's profile; None: the target's own
    profile_path: Path | None = None  # where it came from, for the commands the harness prints

    @property
    def identity(self) -> str:
        """What a cassette says it was recorded against: the profile's name (stable when the import path moves),
        else the spec."""
        return self.name if self.profile is not None and self.name == self.profile.name else self.spec

    @property
    def is_reference(self) -> bool:
        return self.name == REFERENCE


def scenario_profile_path(scenario: Scenario) -> Path | None:
    """The scenario's ``profile:``, relative to the scenario file (to the current folder when it has none)."""
    if scenario.profile is None:
        return None
    source = getattr(scenario, "_source", None)
    base = Path(source.path).parent if source is not None else Path.cwd()
    return (base / scenario.profile).resolve()


def choose_target(scenario: Scenario, *, target: str | None = None, profile: TargetProfile | None = None,
                  profile_path: Path | None = None, profile_is_default: bool = False) -> TargetChoice:
    """``profile_is_default``: ``profile`` is the project's default, which the scenario's own ``profile:`` beats."""
    if (profile is None or profile_is_default) and (path := scenario_profile_path(scenario)) is not None:
        profile, profile_path = load_profile(path), path
    spec = target or scenario.target or (profile.target if profile is not None else None) or REFERENCE
    return TargetChoice(spec=spec, name=target_name(spec, profile), profile=profile, profile_path=profile_path)
