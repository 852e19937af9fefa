"""What a differential run found: the differences between services, declared or not, and the runs that failed."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract.compare import Difference


@dataclass
class DifferentialReport:
    services: list[str]
    scenarios: list[str]  # agent scenarios, then "probe:<name>"
    differences: list[Difference] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # runs that failed (on any service)
    declarations: dict[str, dict[str, str]] = field(default_factory=dict)  # service -> its declared divergences

    @property
    def undeclared(self) -> list[Difference]:
        return [d for d in self.differences if not d.is_declared]

    @property
    def declared(self) -> list[Difference]:
        return [d for d in self.differences if d.is_declared]

    @property
    def ok(self) -> bool:
        return not self.undeclared and not self.errors
