"""One session-service probe per kind of service and run, however many workers ``run -j N`` has.

The contract suite a scenario's trace carries (harness/run/service_probe.py) costs 1-2 s of CPU and depends on the
service's code only, so a run needs it once per kind of service; with a probe per worker, ``-j 2`` paid it
twice. The workers share a folder (``RunOptions.probe_share``):

* the first worker to meet a kind of service *claims* it (an exclusive create of ``<key>.claim``), probes, and
  writes ``<key>.json`` before it sends that scenario's result;
* a worker that finds ``<key>.json`` reads it;
* a worker that finds only the claim does not wait for a probe running elsewhere: its trace carries a
  ``pending`` record naming the key, and the parent (``PendingProbes``) puts the record in once it is written
  and judges that result's service-contract checks again (``harness/checks/service_contract.py``).

If the worker probing dies, no record is written: the results left pending say so, and that worker's own
scenario is an error already.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..trace.model import ServiceProbeRecord

if TYPE_CHECKING:
    from ..result import ScenarioResult
    from ..scenario.models import Scenario


def share_key(key: tuple[str, ...]) -> str:
    return hashlib.sha256("\0".join(key).encode("utf-8")).hexdigest()[:16]


def _load(path: Path) -> ServiceProbeRecord:
    return ServiceProbeRecord.model_validate_json(path.read_text(encoding="utf-8"))


async def shared_probe(folder: str, key: tuple[str, ...], service: str,
                       probe: Callable[[], Awaitable[ServiceProbeRecord]]) -> ServiceProbeRecord:
    """The record of ``key`` from ``folder``, else ``probe()``'s (and left there for the others), else — another
    worker holds the claim and has not written it yet — a pending record the parent fills in."""
    digest = share_key(key)
    record_path, claim_path = Path(folder) / f"{digest}.json", Path(folder) / f"{digest}.claim"
    if record_path.exists():
        return _load(record_path)
    try:
        os.close(os.open(claim_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        if record_path.exists():  # written between the two looks
            return _load(record_path)
        return ServiceProbeRecord(service=service, profile="-", pending=digest)
    record = await probe()
    # Whole or not at all: a reader never sees half a record.
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, suffix=".tmp", delete=False) as out:
        out.write(record.model_dump_json())
    os.replace(out.name, record_path)
    return record


class PendingProbes:
    """The parent's side: results whose probe ran in another worker are held until its record is in the folder,
    then handed on with the record and the checks that read it judged again."""

    def __init__(self, folder: str) -> None:
        self._folder = Path(folder)
        self._held: list[tuple[int, ScenarioResult, Scenario]] = []

    def settle(self, index: int, result: ScenarioResult, scenario: Scenario) -> list[tuple[int, ScenarioResult]]:
        """``(index, result)`` pairs ready to keep: this one unless its probe is pending, and every held one whose
        record has been written since."""
        self._held.append((index, result, scenario))
        ready, self._held = self._sorted_out(final=False)
        return ready

    def finish(self) -> list[tuple[int, ScenarioResult]]:
        """What is still held at the end of the run, each saying why its probe has no record."""
        ready, self._held = self._sorted_out(final=True)
        return ready

    def _sorted_out(self, *, final: bool) -> tuple[list[tuple[int, ScenarioResult]],
                                                   list[tuple[int, ScenarioResult, Scenario]]]:
        ready: list[tuple[int, ScenarioResult]] = []
        held: list[tuple[int, ScenarioResult, Scenario]] = []
        for index, result, scenario in self._held:
            probe = result.trace.service_probe if result.trace is not None else None
            if probe is None or not probe.pending:
                ready.append((index, result))
                continue
            path = self._folder / f"{probe.pending}.json"
            if path.exists():
                ready.append((index, with_probe(result, scenario, _load(path))))
            elif final:
                ready.append((index, with_probe(result, scenario, probe.model_copy(update={
                    "pending": None, "skipped": "the worker of this run that was probing this kind of session "
                                               "service ended before it finished (see the scenario it was running, "
                                               "an error); run with -j 1 to probe it in this scenario"}))))
            else:
                held.append((index, result, scenario))
        return ready, held


def with_probe(result: ScenarioResult, scenario: Scenario, record: ServiceProbeRecord) -> ScenarioResult:
    """``result`` with ``record`` as its probe and the checks that read it judged again (those the scenario
    skips stay skipped)."""
    from ..checks.service_contract import JUDGED, judge

    assert result.trace is not None
    trace = result.trace.model_copy(update={"service_probe": record})
    skipped = scenario.expect.checks.skip
    checks = tuple(judge(c.name, trace) if c.name in JUDGED and c.name not in skipped else c
                   for c in result.checks)
    return dataclasses.replace(result, trace=trace, checks=checks)
