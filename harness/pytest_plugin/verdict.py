"""``assert_conforms``: one item's verdict, the failed checks and then the snapshot, as one readable failure.

The snapshot is compared even when checks fail: a snapshot records what the target did, the checks judge
it, and syrupy must see every snapshot used (or it reports it unused, and ``--snapshot-update`` deletes
it). Failures use ``pytest.fail(pytrace=False)``: the message is the whole story, with no traceback of
the plugin around it.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..run.options import CASSETTE_VERDICT
from ..snapshot.extension import SNAPSHOT_FOLDER, SNAPSHOT_NAME, ScenarioSnapshotExtension
from .session import SESSION

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from harness.result import ScenarioResult

MAX_EVIDENCE = 8


def assert_conforms(result: ScenarioResult, snapshot: SnapshotAssertion) -> None:
    """Fail the current test unless every check passed and the normalized trace equals its snapshot."""
    from ..report.summary import error_lines
    from ..snapshot.normalize import normalize_trace

    item = snapshot.test_location.item
    item.stash[SNAPSHOT_NAME] = result.scenario
    session = item.config.stash.get(SESSION, None)
    if session is not None and (scenario := session.scenario_of(item)) is not None:
        item.stash[SNAPSHOT_FOLDER] = session.snapshot_folder(scenario)
    snap = snapshot.use_extension(ScenarioSnapshotExtension)
    location = Path(snap.extension.get_location(test_location=snap.test_location, index=snap.index))
    existed = location.is_file()
    if result.error is not None or result.trace is None:
        _keep(snap, location)
        pytest.fail(_harness_error(result, item), pytrace=False)
    with _quiet_syrupy_layout_warnings():
        matches = snap == normalize_trace(result.trace)
    lines = [f"{result.scenario} on target {result.target}: {line}" for line in error_lines(result)]
    accepted = _accepted(item.config, result)
    lines += _failed_checks(result, accepted=set(accepted))
    if any(c.name == CASSETTE_VERDICT and c.failed for c in result.checks):
        lines.append(f"  Re-record from pytest: {item.config.stash[SESSION].record_command(item.nodeid)}")
    if not matches:
        lines += _snapshot_mismatch(snap, location, existed, item)
    said = [f"accepted by {entry}" for entry in accepted.values()]
    if lines:
        pytest.fail("\n".join(lines + said), pytrace=False)
    if said:
        pytest.xfail("; ".join(said))


def _accepted(config: pytest.Config, result: ScenarioResult) -> dict[str, str]:
    """--baseline: the failed checks of ``result`` the file accepts (check -> its entry, described); the harness's
    own rows are never accepted. An entry naming this scenario whose check passed is said, as a warning, to be
    stale."""
    from ..run.baseline import HARNESS_ROWS, load_baseline
    from ..checks.base import Status

    path = config.getoption("rlm_baseline", None)
    if path is None:
        return {}
    baseline = load_baseline(Path(path))
    failed = {c.name for c in result.checks if c.status is Status.FAIL and c.name not in HARNESS_ROWS}
    accepted = {name: f"{baseline.path.as_posix()}: {entry.describe()}" for name in sorted(failed)
                if (entry := baseline.accepting(name, result.scenario)) is not None}
    for entry in baseline.entries:
        if entry.where == result.scenario and entry.check not in failed:
            warnings.warn(f"no longer occurs: {entry.describe()}: remove it from {baseline.path.as_posix()}",
                          UserWarning, stacklevel=1)
    return accepted


def _failed_checks(result: ScenarioResult, *, accepted: set[str] = frozenset()) -> list[str]:
    from ..checks.base import Status

    failed = [c for c in result.checks if c.status is Status.FAIL and c.name not in accepted]
    if not failed:
        return []
    lines = [(f"{result.scenario} on target {result.target} (llm-mode {result.llm_mode}, session-service "
              f"{result.session_service}): {len(failed)} of {len(result.checks)} checks failed")]
    for check in failed:
        lines.append(f"  FAIL {check.name}: {check.explanation}")
        lines += [f"      - {e}" for e in check.evidence[:MAX_EVIDENCE]]
        if len(check.evidence) > MAX_EVIDENCE:
            lines.append(f"      ... and {len(check.evidence) - MAX_EVIDENCE} more")
    return lines


def _snapshot_mismatch(snap: SnapshotAssertion, location: Path, existed: bool, item: pytest.Item) -> list[str]:
    config = item.config
    shown = _relative(location, config.rootpath)
    update = config.stash[SESSION].command(item.nodeid, "--snapshot-update")
    with _colors(config):
        diff = snap.get_assert_diff(diff_mode=config.option.diff_mode)
    if not existed:  # syrupy's own line ("Snapshot '...' does not exist!"), not the whole file as a diff
        return [f"snapshot {shown}: {diff[0] if diff else 'missing'}",
                f"  Create it by re-running with --snapshot-update: {update}"]
    return [f"snapshot {shown} differs from this run (- snapshot, + this run):",
            *(f"  {line}" for line in diff),
            f"  If the change is intended, review it and re-run with --snapshot-update: {update}"]


def _harness_error(result: ScenarioResult, item: pytest.Item) -> str:
    text = (f"{result.scenario} could not be run (target {result.target}, llm-mode {result.llm_mode}, "
            f"session-service {result.session_service}): {result.error}")
    if "cassette" in (result.error or "").lower():
        text = f"{text.rstrip('. ')}. Or, from pytest: {item.config.stash[SESSION].record_command(item.nodeid)}"
    return text


def _keep(snap: SnapshotAssertion, location: Path) -> None:
    """Mark the existing snapshot as used without judging it: a run that could not happen (no cassette)
    must not get its snapshot reported unused, or deleted by ``--snapshot-update``."""
    try:
        existing = json.loads(location.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    with _quiet_syrupy_layout_warnings():
        snap == existing  # noqa: B015  (the comparison is the side effect)


@contextlib.contextmanager
def _quiet_syrupy_layout_warnings():
    # syrupy warns when a snapshot's file or name does not contain the test's module or function name
    # ("Can not relate snapshot ... to the test location"). Ours are named after scenarios on purpose.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Can not relate snapshot")
        yield


def _colors(config: pytest.Config) -> contextlib.AbstractContextManager[None]:
    from syrupy.terminal import disable_color

    return disable_color() if config.option.no_colors else contextlib.nullcontext()


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
