"""``--rlm-crash POINTS``: ``rlm-conformance crash`` inside a pytest run, one item ``crash::<scenario>`` each.

The items are added at the end of collection (``pytest_collection_modifyitems``, before ``-k`` and ``-m`` select,
so ``-k single_delegation`` or ``-m rlm_crash`` pick them like any other), for the scenarios the crash verb would
pick from the configured scenario folders (``harness/crash/selection.py``: tagged ``crash`` or declaring a crash or
concurrent case, else all). Each item runs the scenario's crash run when it runs — the matrix of POINTS, a declared
case's own point, a concurrent case's runners — with what the plugin resolved (target, profile, session service,
executor; always the scripted model) and the same code as the CLI. It fails with the CLI's lines (each point, its
failing checks, their explanation and first evidence) and the command that reproduces it; a matrix that cannot
judge (an in-memory service, every point n/a) is a skip with the reason. One item per scenario, not per point: the
points share the uncrashed run that finds them. ``--rlm-crash-jobs N`` runs a scenario's points side by side;
xdist (``-n``) spreads the scenarios.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import pytest

from .session import SESSION

if TYPE_CHECKING:
    from ..scenario.models import Scenario

MARK = "rlm_crash"
MARK_HELP = f"{MARK}: a crash::<scenario> item of --rlm-crash (rlm-conformance crash inside pytest)"


class CrashFailure(Exception):
    """What a failing crash item reports: the whole story is the message (no traceback of the plugin)."""


class CrashItem(pytest.Item):
    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        from ..crash.selection import not_judged, report_lines, run_crash

        conformance = self.config.stash[SESSION]
        o = conformance.options
        report = run_crash(self.scenario, conformance.run_options(self.scenario), points=o.crash or "after",
                           recovery=o.crash_recovery, jobs=o.crash_jobs, max_points=o.crash_max_points)
        self.user_properties.append(("crash_seconds", round(report.seconds, 1)))
        if report.failed:
            raise CrashFailure("\n".join([*report_lines(report), f"  Reproduce: {self.command()}"]))
        reason = not_judged(report)
        if reason is not None:
            pytest.skip(f"crash {self.scenario.name}: {reason}")

    def command(self) -> str:
        """The CLI command that runs this item's crash run alone, with the options the plugin resolved."""
        o = self.config.stash[SESSION].options
        words = ["rlm-conformance", "crash", self.scenario.name, "--points", o.crash or "after"]
        if len(o.scenarios) == 1:
            words += ["--scenarios-dir", str(o.scenarios[0])]
        for flag, value in (("--target", o.target), ("--profile", o.profile_path),
                            ("--recovery", o.crash_recovery), ("--max-points", o.crash_max_points)):
            if value is not None:
                words += [flag, str(value)]
        if o.session_service != "delta":
            words += ["--session-service", o.session_service]
        if o.backend != "local":
            words += ["--backend", o.backend]
        return shlex.join(words)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CrashFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.config.rootpath / "crash", None, self.name  # shown as "crash" in progress lines


def crash_items(session: pytest.Session) -> list[CrashItem]:
    """The items of ``--rlm-crash`` (none without it)."""
    from ..crash.selection import default_selection

    conformance = session.config.stash[SESSION]
    if conformance.options.crash is None:
        return []
    items = []
    for scenario in default_selection(conformance.scenarios()):
        # The id "crash::<scenario>" reads as what it is (a child of the session alone would be "::<name>").
        item = CrashItem.from_parent(session, name=scenario.name, nodeid=f"crash::{scenario.name}",
                                     scenario=scenario)
        item.add_marker(MARK)
        items.append(item)
    return items
