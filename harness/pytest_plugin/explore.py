"""``--rlm-explore N``: ``rlm-conformance explore`` inside a pytest run, each finding a failing item.

The exploration runs once per process, at the end of collection (``pytest_collection_modifyitems``, before
``-k`` and ``-m`` select, so its items are selected like any other), with what the plugin resolved: the target,
profile, session service and executor; N examples, seed 0, every check. Its example database and the minimal
scenarios it writes live under ``<rootdir>/.rlm-conformance/`` (the CLI's cache folder; gitignored), not in the
scenario folders a bare ``pytest`` collects. Each finding is an item ``explore::<check>`` failing with the
evidence, the minimal conversation and the commands that reproduce it and keep it; when nothing is found no
item is added, so the run's outcome is the tests' alone. An exploration that cannot run (a profile naming no
agent of the target, say) is one failing item ``explore::could_not_run`` with the
reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .session import SESSION

if TYPE_CHECKING:
    from ..explore.engine import Finding, Report

REPORT = pytest.StashKey["Report"]()
"""On ``config.stash``: the exploration's report, for the terminal summary."""
CACHE = Path(".rlm-conformance")


class ExploreFailure(Exception):
    """What an explore item reports: the whole story is the message (no traceback of the plugin)."""


class ExploreItem(pytest.Item):
    rlm_unsharded = True  # made by shard 1/n's search alone: --shard keeps it there (session.keep_shard)

    def __init__(self, *, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text

    def runtest(self) -> None:
        raise ExploreFailure(self.text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ExploreFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.config.rootpath / "explore", None, self.name  # shown as "explore" in progress lines


def _item(session: pytest.Session, name: str, text: str) -> ExploreItem:
    # The id "explore::<check>" reads as what it is (a child of the session alone would be "::<name>").
    return ExploreItem.from_parent(session, name=name, nodeid=f"explore::{name}", text=text)


def explore_items(session: pytest.Session) -> list[ExploreItem]:
    """The items of ``--rlm-explore N`` (none without it, or when nothing is found)."""
    from ..errors import HarnessError
    from ..explore.run import ExploreSettings, explore

    conformance = session.config.stash[SESSION]
    options = conformance.options
    if options.explore is None or (options.shard is not None and options.shard.index != 1):
        return []  # one search, not split (its examples depend on what it found): shard 1/n runs it
    cache = session.config.rootpath / CACHE
    settings = ExploreSettings(out_dir=cache / "found", target=options.target, profile_path=options.profile_path,
                               session_service=options.session_service, executor=options.executor,
                               max_examples=options.explore, database=cache / "explore-db",
                               behaviours=options.explore_behaviours)
    try:
        report = explore(settings, profile=conformance.profile)
    except HarnessError as exc:
        return [_item(session, "could_not_run", f"explore could not run: {exc}")]
    session.config.stash[REPORT] = report
    return [_item(session, f.check, describe(f, report, settings)) for f in report.findings]


def describe(finding: Finding, report: Report, settings: Any) -> str:
    where = finding.path.parent if finding.path else settings.out_dir
    name = finding.path.stem if finding.path else "?"
    lines = [f"explore found check {finding.check} failing on target {report.target} (seed {report.seed}, "
             f"first after {finding.after_s:.0f}s at example #{finding.after_examples})",
             f"  evidence: {finding.shape}",
             f"  minimal conversation: {finding.plan.describe()}",
             f"  scenario: {finding.path}" + ("" if finding.reproduced else
                                               " (it did not fail the same check when run again: the failure "
                                               "depends on something it does not pin, timing?)"),
             f"  Reproduce: rlm-conformance run --scenario {name} --scenarios-dir {where} --llm-mode scripted",
             "  Keep it: move the file into your scenarios folder and record its cassette "
             f"(rlm-conformance record --scenario {name}); the search again: {settings.command_line()}"]
    return "\n".join(lines)


def summary(config: pytest.Config) -> str | None:
    """One line for the terminal summary: what the exploration ran and found."""
    report = config.stash.get(REPORT, None)
    if report is None:
        return None
    found = ", ".join(f.check for f in report.findings) or "nothing"
    return (f"rlm-conformance explore {report.target} (seed {report.seed}): {report.tried} examples run "
            f"({report.shrink_runs} while shrinking), {report.discarded} discarded, {report.elapsed_s:.1f}s; "
            f"found {found}")
