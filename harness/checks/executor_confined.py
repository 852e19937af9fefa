"""The executed code is confined: every escape attempt of the probe was stopped, and no protection is missing
where the run requires them.

Evidence from both sides. Inside: the escape-probe scenario (``scenarios/executor_escape_probe.yaml``) runs
code that tries each way out and prints one line per attempt, ``rlm-escape <attempt>: blocked|escaped <how>``.
Outside: the harness planted the targets and watched them (``harness/run/escape_probe.py``): a connection its
listener accepted, a file that appeared in its folder, or its secret's text in anything the code printed is
an escape whatever the code said. An attempt the code never reported (it crashed or was killed first) fails
too: an unproven stop is not a stop — where the harness can read what the code printed at all (``printed.py``:
the executor's record, or the agent's stdout preview key); where it cannot, only what it saw outside is judged. Independently, a target may say which protections its executor lacks on
this machine (``Trace.executor_confinement``): listed always, a failure under ``--require-confinement``.
"""

from __future__ import annotations

from ..trace.model import EscapeProbeRecord, Trace
from .base import CheckContext, CheckResult, check, failed, not_applicable, passed
from .evidence import capped
from .printed import Printed, printed_outputs, unseen_reason

NAME = "executor_confined"
LINE_PREFIX = "rlm-escape "
ATTEMPTS = {
    "write_outside": "write a file outside the executor's folders",
    "read_outside": "read a file outside the folders it may read",
    "read_host_environ": "read its parent process's environment (/proc/<ppid>/environ: the host's credentials)",
    "connect_local": "connect to a local TCP port that is not the LM bridge",
    "memory": "allocate twice its address-space limit",
    "file_size": "write a file past its file-size limit",
    "processes": "start processes past its process cap (a bounded fork bomb)",
}
"""What the probe tries, by the name it prints."""


def probe_lines(text: str) -> dict[str, tuple[str, str]]:
    """attempt -> (outcome, how) for each ``rlm-escape`` line in what an execution printed (the last one wins)."""
    found: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        if not line.startswith(LINE_PREFIX):
            continue
        attempt, _, rest = line[len(LINE_PREFIX):].partition(":")
        outcome, _, how = rest.strip().partition(" ")
        if attempt in ATTEMPTS and outcome in ("blocked", "escaped"):
            found[attempt] = (outcome, how.strip())
    return found


def _observed(probe: EscapeProbeRecord, runs: list[Printed], where: str) -> list[str]:
    """Escapes the harness saw from outside, whatever the code reported."""
    seen = []
    if probe.connections:
        seen.append(f"{where}: connect_local: the harness's listener on 127.0.0.1:{probe.port} accepted "
                    f"{probe.connections} connection(s) during the run")
    for path in probe.written:
        seen.append(f"{where}: write_outside: {path} appeared while the scenario ran")
    if any(probe.secret in run.text for run in runs):
        seen.append(f"{where}: read_outside: the code printed the secret planted in {probe.folder}")
    return seen


def _missing_protections(trace: Trace) -> list[str]:
    said = trace.executor_confinement or {}
    return [f"{m.get('protection')} ({m.get('reason')})" for m in said.get("missing") or [] if isinstance(m, dict)]


@check(
    NAME,
    title="The executed code cannot get out of its executor",
    why="The code the executor runs is model-written, and prompt-injected data can make it hostile: on a laptop or a CI "
        "runner it must not write or read outside its folders, reach local services other than the LM bridge, "
        "or take the machine's memory, disk or process table. The escape-probe scenario tries each way out; the "
        "harness watches the targets from outside, so a report the code forged or never finished cannot pass.",
)
def executor_confined(ctx: CheckContext) -> CheckResult:
    trace = ctx.trace
    missing = _missing_protections(trace)
    said = (f" The executor says it runs without: {'; '.join(missing)}." if missing else "")
    problems: list[str] = []
    if missing and trace.confinement_required:
        problems.append(f"--require-confinement, and the executor runs without: {'; '.join(missing)}")
    probe = trace.escape_probe
    if probe is None:
        if problems:
            return failed(NAME, "Confinement is required and the executor lacks protections.", capped(problems))
        return not_applicable(NAME, "The harness planted no escape targets in this scenario (escape_probe: true "
                                    "scenarios do where Job_B runs on this machine: the local backend, the "
                                    "databricks backend's workspace fake; scenarios/executor_escape_probe.yaml)."
                              + said)
    runs = printed_outputs(trace, ctx.profile)
    reports: dict[str, tuple[str, str]] = {}
    prober: Printed | None = None  # the execution that ran the probe: the evidence names it
    for run in runs or []:
        found = probe_lines(run.text)
        if found:
            reports.update(found)
            prober = run
    where = (prober or next(iter(runs or []), None) or Printed("no execution", "")).label
    if runs is None:  # the code's own reports are out of sight: only what the harness saw from outside counts
        problems += _observed(probe, [], where)
        if problems:
            return failed(NAME, f"{len(problems)} escape(s) seen from outside, or protections required and "
                                f"missing: the executor does not confine the code it runs "
                                f"(docs/executor-confinement.md).{said}", capped(problems))
        return not_applicable(NAME, f"Nothing reached the harness's targets from outside, but what the code "
                                    f"reported of each attempt cannot be read, and memory, file size and processes "
                                    f"leave no trace outside: {unseen_reason(ctx.profile)}.{said}")
    stopped = []
    for attempt, what in ATTEMPTS.items():
        outcome, how = reports.get(attempt, (None, ""))
        if outcome is None:
            problems.append(f"{where}: {attempt}: the code never reported whether it could {what} (did the block "
                            f"crash or get killed before? see the execution's stdout)")
        elif outcome == "escaped":
            problems.append(f"{where}: {attempt}: the code could {what}: {how}")
        else:
            stopped.append(f"{where}: {attempt}: stopped ({how})")
    problems += _observed(probe, runs, where)
    if not probe.listening:
        stopped.append(f"note: the harness could not listen on 127.0.0.1:{probe.port} ({probe.listen_error}); "
                       f"connect_local was judged by the code's report alone")
    if problems:
        return failed(NAME, f"{len(problems)} escape(s) or unproven stop(s): the executor does not "
                            f"confine the code it runs (docs/executor-confinement.md).{said}", capped(problems))
    return passed(NAME, f"Every one of the {len(ATTEMPTS)} escape attempts was stopped inside the executor, and the "
                        f"harness saw nothing reach its targets from outside.{said}", capped(stopped))
