"""The session service under test keeps its contract: two writers, ``GetSessionConfig``, event order, the rest.

These read ``trace.service_probe``: the contract cases of ``harness/contract/`` run against the very service
the scenario ran on (``harness/run/service_probe.py``). One topic, four checks, so the report names the invariant
that broke rather than "the contract".
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from .base import CheckContext, CheckResult, Status, check, failed, not_applicable, passed

if TYPE_CHECKING:
    from ..trace.model import Trace

CONCURRENCY_CASES = ("stale_writer_rejected", "concurrent_sessions", "concurrent_scoped_writes", "concurrent_runners")
CONFIG_CASES = ("get_session_config",)
ORDER_CASES = ("event_order",)
OWN_CASES = frozenset((*CONCURRENCY_CASES, *CONFIG_CASES, *ORDER_CASES))
JUDGED: dict[str, tuple[Collection[str] | None, str]] = {
    # check -> (the contract cases it owns, None: every case no other check owns; what they test)
    "stale_writer_rejected": (CONCURRENCY_CASES, "optimistic concurrency (no lost update)"),
    "get_session_config_honoured": (CONFIG_CASES, "GetSessionConfig (num_recent_events, after_timestamp)"),
    "event_order_preserved": (ORDER_CASES, "the append order of events"),
    "session_service_contract": (None, "the session-service contract"),
}
"""The checks that read ``trace.service_probe``: the run's parent judges them again when it fills in a probe
another worker ran (harness/run/probe_share.py)."""


def judge(name: str, trace: Trace) -> CheckResult:
    """Check ``name``'s verdict on ``trace.service_probe`` (a function of the trace alone)."""
    cases, what = JUDGED[name]
    probe = trace.service_probe
    if probe is None:
        return not_applicable(name, "The session service was not probed (the trace has no service probe).")
    if probe.skipped:
        return not_applicable(name, f"The session service was not probed: {probe.skipped}.")
    if probe.pending:
        return not_applicable(name, "Another worker of this run is probing this kind of session service; the run "
                                    "puts its record here when it has one.")
    mine = [c for c in probe.cases if (c.case in cases if cases is not None else c.case not in OWN_CASES)]
    unjudged = [f"contract case {c.case}: n/a — {c.message}" for c in mine if c.status == "n/a"]
    mine = [c for c in mine if c.status != "n/a"]
    if not mine:
        return CheckResult(name, Status.NOT_APPLICABLE, f"No contract case of {what} ran on {probe.service}.",
                           tuple(unjudged))
    where = f"{probe.service} (contract profile {probe.profile!r})"
    failures = [f"contract case {c.case} ({c.description}): {c.message}" for c in mine if c.status == "fail"]
    declared = [f"contract case {c.case}: declared divergence — {c.message}" for c in mine if c.status == "declared"]
    if failures:
        return failed(name, f"The session service under test, {where}, breaks {what}.{fix_for(name, trace)}",
                      failures + declared + unjudged)
    if declared and len(declared) == len(mine):
        return CheckResult(name, Status.NOT_APPLICABLE, f"{where} declares that it does not keep {what}.",
                           tuple(declared + unjudged))
    passing = ", ".join(c.case for c in mine if c.status == "pass")
    if declared:
        return passed(name, f"{where} passes {passing}; it declares a divergence from the rest of {what} "
                            f"(its contract profile says so): " + ", ".join(c.case for c in mine
                                                                           if c.status == "declared") + ".",
                      declared + unjudged)
    return passed(name, f"{where} keeps {what}: {passing}.", unjudged)


def fix_for(name: str, trace: Trace) -> str:
    """What to change when ``name`` fails, and who asked for the behaviour (harness/run/service_semantics.py)."""
    said = trace.service_semantics
    if name == "stale_writer_rejected":
        asked = f" (rejection required: said by {said['stale_writes']})" if said.get("stale_writes") else ""
        return (f" Make it refuse a stale writer's append with any exception, storing nothing and leaving the session "
                f"readable{asked}; if it accepts stale writes by design, say stale_writes: accept in the target "
                f"profile (or rejects_stale_writes = False on its class).")
    if name == "session_service_contract" and said.get("none_semantics"):
        return (f" Where the contract allows a choice, the service is judged by what was said: None semantics by "
                f"{said['none_semantics']} (none_semantics: delete | store in the target profile, or on its class).")
    return ""


@check(
    "stale_writer_rejected",
    title="Two writers on one session: exactly one wins, nothing is lost",
    why="Optimistic concurrency: of two writers holding the same fetched session, the second to append must be "
        "refused (StaleSessionError, or any error of the service's own: judged by what was stored, nothing of the "
        "stale write and the session still readable), and after a reload every write — session, user: and app: "
        "keys — is there. A service without a version check lets a stale writer overwrite or drop the other's update, silently. Run as "
        "contract cases against the service the scenario used.",
    dod_item="design: DeltaSessionService with optimistic concurrency (a stale writer gets StaleSessionError)",
)
def stale_writer_rejected(ctx: CheckContext) -> CheckResult:
    return judge("stale_writer_rejected", ctx.trace)


@check(
    "get_session_config_honoured",
    title="get_session honours GetSessionConfig",
    why="num_recent_events keeps the newest N events (0: none) and after_timestamp the events at or after it; "
        "state is not filtered. Agents and ADK's own flows read sessions with these filters; a service that ignores "
        "them hands an agent the wrong history.",
    dod_item="design: the session service keeps ADK's BaseSessionService contract",
)
def get_session_config_honoured(ctx: CheckContext) -> CheckResult:
    return judge("get_session_config_honoured", ctx.trace)


@check(
    "event_order_preserved",
    title="Events come back in append order",
    why="get_session returns a session's events oldest first, in the order they were appended, with their "
        "authors and deltas: the conversation history ADK builds prompts from is that list.",
    dod_item="design: the session service keeps ADK's BaseSessionService contract",
)
def event_order_preserved(ctx: CheckContext) -> CheckResult:
    return judge("event_order_preserved", ctx.trace)


@check(
    "session_service_contract",
    title="The session service keeps the rest of its contract",
    why="Create, get, list and delete; AlreadyExists and NotFound; app:/user:/session scoping; temp: never "
        "persisted; None per the service's declared semantics; partial events not stored; large and unicode "
        "values round-trip. The contract suite's remaining cases, against the service the scenario used.",
    dod_item="design: the session service keeps ADK's BaseSessionService contract",
)
def session_service_contract(ctx: CheckContext) -> CheckResult:
    return judge("session_service_contract", ctx.trace)
