"""The check registry: every Definition-of-Done item is a function registered by name.

A check reads a finished ``Trace`` (and the scenario and target profile) and
returns a ``CheckResult`` that carries its own explanation and the evidence —
each piece naming the event, request or row it is about — so a report shows
exactly why it passed or failed. Checks never run the target themselves.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from ..scenario.models import Scenario
    from ..targets.profile import TargetProfile
    from ..trace.model import Trace


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    explanation: str
    evidence: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL


@dataclass(frozen=True)
class CheckContext:
    trace: "Trace"
    scenario: "Scenario"
    profile: "TargetProfile"


CheckFn = Callable[[CheckContext], CheckResult]


@dataclass(frozen=True)
class CheckSpec:
    name: str
    title: str
    why: str = field(repr=False)
    fn: CheckFn = field(repr=False)
    dod_item: str | None = None


_REGISTRY: dict[str, CheckSpec] = {}


def check(name: str, *, title: str, why: str, dod_item: str | None = None) -> Callable[[CheckFn], CheckFn]:
    """Register a check under ``name``. ``why`` is what ``rlm-conformance explain NAME`` prints."""

    def register(fn: CheckFn) -> CheckFn:
        if name in _REGISTRY:
            raise ValueError(f"check {name!r} is registered twice ({_REGISTRY[name].fn.__module__} and {fn.__module__})")
        _REGISTRY[name] = CheckSpec(name=name, title=title, why=why, fn=fn, dod_item=dod_item)
        return fn

    return register


def registered_checks() -> dict[str, CheckSpec]:
    """Every check of this package, by name: each module of ``harness/checks`` is imported (a check module
    registers its checks when imported), so a new check is a new module and nothing else."""
    _import_every_module()
    return {name: _REGISTRY[name] for name in sorted(_REGISTRY)}


@functools.cache
def _import_every_module() -> None:
    package = __name__.rpartition(".")[0]
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{module.name}")


def passed(name: str, explanation: str, evidence: Iterable[str] = ()) -> CheckResult:
    return CheckResult(name, Status.PASS, explanation, tuple(evidence))


def failed(name: str, explanation: str, evidence: Iterable[str] = ()) -> CheckResult:
    return CheckResult(name, Status.FAIL, explanation, tuple(evidence))


def not_applicable(name: str, explanation: str) -> CheckResult:
    return CheckResult(name, Status.NOT_APPLICABLE, explanation)
