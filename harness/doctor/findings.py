"""What the doctor finds: one ``Finding`` per check and problem (level, message, fix), and the report they make.

``error``: a recording would break (exit 1); ``warning``: it runs, but mind this (exit 0); ``skipped``: the check
could not run because an earlier one failed or it was not asked for.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass


class Level(enum.StrEnum):
    OK = "ok"
    WARNING = "warning"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Finding:
    check: str
    level: Level
    message: str
    fix: str = ""


def ok(check: str, message: str) -> Finding:
    return Finding(check, Level.OK, message)


def warning(check: str, message: str, fix: str = "") -> Finding:
    return Finding(check, Level.WARNING, message, fix)


def error(check: str, message: str, fix: str = "") -> Finding:
    return Finding(check, Level.ERROR, message, fix)


def skipped(check: str, message: str) -> Finding:
    return Finding(check, Level.SKIPPED, message)


@dataclass(frozen=True)
class DoctorReport:
    title: str
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level is Level.ERROR]

    @property
    def exit_code(self) -> int:
        """1 when anything would break a recording, else 0 (warnings included)."""
        return 1 if self.errors else 0

    def level_of(self, check: str) -> Level | None:
        """The worst level among the findings of ``check`` (None: no such check)."""
        order = [Level.ERROR, Level.WARNING, Level.OK, Level.SKIPPED]
        levels = {f.level for f in self.findings if f.check == check}
        return next((level for level in order if level in levels), None)

    def as_json(self) -> dict[str, object]:
        counts = {level.value: sum(f.level is level for f in self.findings) for level in Level}
        return {"title": self.title, "ok": not self.errors, "exit_code": self.exit_code, "counts": counts,
                "findings": [{**asdict(f), "level": f.level.value} for f in self.findings]}
