"""The search: rounds of Hypothesis over generated conversations, each round finding and shrinking one new
failing check.

A round is a Hypothesis test over ``plans(model)``: an example runs through ``run_scenario`` (scripted mode,
cached by plan, so replays and shrink candidates equal to an earlier example cost nothing) and the test fails
when the example fails a check no earlier round found. The first such check becomes the round's target; from
then on only that check counts, so Hypothesis shrinks a failure with one stable meaning to its minimal example,
which it replays last. Other checks some run failed on the way are shrunk next, structurally only, from the
smallest plan seen failing each (often the minimum just found). Then the next round looks for the checks still
unfound. Rounds end when one finds nothing in the examples left, or the budget (``--max-examples``,
``--time``) is spent.

Every run also keeps the smallest plan seen failing each check (by ``Plan.size``): a check that fails on the
simplest conversation is found, minimal, on the first example. Shrinking has a budget of its own per finding
(``shrink_runs``): Hypothesis spends at most half of it (past that, candidates never run before count as
passing, so it stops at the smallest failing example it has), then ``shrink.polish`` the rest on structural
simplifications Hypothesis may not have reached (a turn, a step, an iteration fewer).

Deterministic: the same seed, target and library give the same examples in the same order, hence the same
findings; every round runs with the same settings, so all draw one sequence from the seed. The example database
(``.rlm-conformance/explore-db`` by default) has a folder per target, seed, checks searched and checks already
found (Hypothesis' public database API; no private key hook), so a second run replays each round's minimal
example first.

With ``jobs`` > 1 (``-j``), worker processes (pool.py) run what the search will ask for next: the round's coming
examples (a dry run of the same test function, seed, settings and database, read only, every example passing)
and the structural shrinker's next candidates. The search itself is unchanged, so it makes the same runs in the
same order and finds the same; ``Report.unused_runs`` counts the work done ahead for nothing.

Obstructions (issue 51): the examples whose turns raised are counted; when they are most of the search, the
report states an obstruction and reports it once (``_obstruction``). With ``stop_when_blocked`` the search ends
as soon as every example so far raised on one missing state key (an instruction's ``{silo}``): run.py reports it,
seeds the key into the starting state and searches again. A hang (``example_timeout``, hang.py) is a finding the
rounds never shrink.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..run.options import RunOptions
from .findings import HARNESS_BUG, TARGET_HUNG, TURNS_RAISED, Verdict, judge
from .library import Library
from .plan import Plan, to_scenario
from .target_model import TargetModel

if TYPE_CHECKING:
    from ..scenario.models import Scenario
    from .pool import Pool, Run

EXAMPLE_NAME = "explore_example"
LOOKAHEAD = 100
"""Examples run ahead of a round whose budget is time alone (with ``jobs`` > 1)."""


BLOCKED_AFTER = 8
"""Examples judged before a missing state key that made every one of them raise stops the search (``blocked``)."""


class _Blocked(BaseException):
    """Every example so far raised on the same missing state key: the search says nothing about the other checks
    until a session starts with it (run.py seeds it and searches again)."""


class _Exhausted(BaseException):
    """The generation budget is spent: ends the round without a failure (a BaseException: Hypothesis lets it
    through instead of treating it as a failure to shrink)."""


class _NewFailure(Exception):
    """A generated example failed the round's check; a subclass per check, so each is its own bug to Hypothesis."""

    def __init__(self, check: str, plan: Plan) -> None:
        super().__init__(check)
        self.check, self.plan = check, plan


@dataclass(frozen=True)
class Budget:
    max_examples: int | None = 100  # examples generated (runs that are not replays or shrink candidates)
    time_s: float | None = None
    shrink_runs: int = 40  # runs spent shrinking one finding: half at most by Hypothesis, the rest structurally


@dataclass
class Finding:
    check: str
    shape: str
    plan: Plan
    after_s: float  # time from the start to its first failing example
    after_examples: int
    path: Path | None = None
    written_turns: int = 0
    written_steps: int = 0
    reproduced: bool = False


@dataclass
class Report:
    target: str
    seed: int
    tried: int = 0
    discarded: int = 0
    raised_turns: int = 0
    shrink_runs: int = 0
    elapsed_s: float = 0.0
    unused_runs: int = 0  # -j: runs made ahead that the search never asked for (at most, as some may be running)
    findings: list[Finding] = field(default_factory=list)
    discard_reasons: dict[str, int] = field(default_factory=dict)
    raised_reasons: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)  # the scenario name a finding of each check searched gets
    examples_judged: int = 0  # examples not discarded
    examples_raised: int = 0  # ... of which a turn raised
    turns_run: int = 0  # turns of the examples judged
    obstruction: str | None = None  # most examples' turns raised: what the search could not get past
    blocked_keys: tuple[str, ...] = ()  # the search stopped on these missing state keys (``stop_when_blocked``)


@dataclass
class _Round:
    target: str | None = None
    shrink_runs: int = 0
    lookahead: int = 0  # examples the dry run notes
    coming: dict[str, Plan] | None = None  # while the dry run runs: the examples noted so far


class Explorer:
    def __init__(self, model: TargetModel, library: Library, options: RunOptions, *, checks: frozenset[str],
                 seed: int, budget: Budget, database: Path | None,
                 on_progress: Callable[[Report], None] | None = None, jobs: int = 1, run: Run | None = None,
                 stop_when_blocked: bool = False, example_timeout: float | None = None, crash: bool = False) -> None:
        """``jobs``: worker processes running examples ahead of the search (1: every run in this process);
        ``run``: what runs a scenario (default: ``run_scenario``; a module-level function, for the workers);
        ``stop_when_blocked``: end the search once every example so far raised on one missing state key;
        ``example_timeout``: seconds an example may run, past which it is ``target_hung`` (hang.py: examples then
        run in worker processes, one with ``jobs`` 1; None: no limit); ``crash``: every example killed at a drawn
        point and recovered, judged by the crash checks (crash_example.py)."""
        self.crash = crash
        self.model, self.library, self.checks, self.seed, self.budget = model, library, checks, seed, budget
        self.options = replace(options, target=model.spec, profile=model.profile, probe_session_service=False)
        self.database = database
        self.on_progress = on_progress or (lambda report: None)
        self.report = Report(target=model.spec, seed=seed, notes=list(model.notes))
        self._cache: dict[str, Verdict] = {}
        self._smallest: dict[str, tuple[tuple[int, ...], Plan]] = {}
        self._first: dict[str, tuple[float, int, str]] = {}
        self._started = 0.0
        self._generated = 0
        self.jobs, self._run_scenario = jobs, run
        self._pool: Pool | None = None
        self._sequence: dict[str, Plan] | None = None  # the examples every round draws, without a database
        self.stop_when_blocked = stop_when_blocked
        self.example_timeout = example_timeout
        self._missing: dict[str, int] = {}  # missing state key -> examples that raised on it
        self._smallest_raised: tuple[tuple[int, ...], Plan] | None = None
        self._fails_raised: dict[str, int] = {}  # check -> examples whose turns raised and that failed it

    # --- one example -------------------------------------------------------------------------------------------

    def verdict(self, plan: Plan) -> Verdict:
        """The cached verdict of ``plan``, running it if it never ran (or taking the pool's, run ahead)."""
        key = plan.key()
        if key not in self._cache:
            self._cache[key] = self._account(plan, self._execute(plan, key))
        return self._cache[key]

    def _scenario(self, plan: Plan) -> Scenario:
        return to_scenario(plan, self.model, self.library, name=EXAMPLE_NAME,
                           description="A conversation generated by rlm-conformance explore.")

    def _execute(self, plan: Plan, key: str) -> Verdict:
        if self._pool is not None:
            return self._pool.get(key, self._scenario(plan))
        from .pool import run_scenario

        return judge((self._run_scenario or run_scenario)(self._scenario(plan), self.options), self.checks)

    def _ahead(self, plans: list[Plan], *, soon: bool = False) -> None:
        """Hand the pool plans the search will ask for next (``soon``: before the round's coming examples)."""
        if self._pool is None:
            return
        jobs = [(p.key(), self._scenario(p)) for p in plans if p.key() not in self._cache]
        if soon:
            self._pool.soon(jobs[:self.jobs])
        else:
            self._pool.ahead(jobs)

    def _account(self, plan: Plan, verdict: Verdict) -> Verdict:
        """Count a run the search asked for: the same runs, in the same order, whatever ``jobs`` is."""
        report = self.report
        report.tried += 1
        report.raised_turns += len(verdict.raised)
        for how in verdict.raised:
            report.raised_reasons[how] = report.raised_reasons.get(how, 0) + 1
        if verdict.discarded is not None:
            report.discarded += 1
            report.discard_reasons[verdict.discarded] = report.discard_reasons.get(verdict.discarded, 0) + 1
        size = plan.size(self.library)
        if verdict.discarded is None:
            self._count_raised(plan, verdict, size)
        for check, shape in verdict.failing.items():
            if check not in self._first:
                self._first[check] = (time.perf_counter() - self._started, report.tried, shape)
            if check not in self._smallest or size < self._smallest[check][0]:
                self._smallest[check] = (size, plan)
        report.elapsed_s = time.perf_counter() - self._started
        self.on_progress(report)
        if self.stop_when_blocked and report.examples_judged >= BLOCKED_AFTER:
            blocking = tuple(k for k, n in self._missing.items() if n == report.examples_judged)
            if blocking:
                report.blocked_keys = blocking
                raise _Blocked()
        return verdict

    def _count_raised(self, plan: Plan, verdict: Verdict, size: tuple[int, ...]) -> None:
        """Examples judged and those whose turns raised (the obstruction's smallest one, its missing keys)."""
        report = self.report
        report.examples_judged += 1
        report.turns_run += plan.turns
        if not verdict.raised:
            return
        report.examples_raised += 1
        for check in verdict.failing:
            self._fails_raised[check] = self._fails_raised.get(check, 0) + 1
        for key in verdict.missing_keys:
            self._missing[key] = self._missing.get(key, 0) + 1
        if self._smallest_raised is None or size < self._smallest_raised[0]:
            self._smallest_raised = (size, plan)
            self._first.setdefault(TURNS_RAISED, (time.perf_counter() - self._started, report.tried,
                                                  verdict.raised[0]))

    def _obstruction(self) -> None:
        """Most examples' turns raised: never a clean search. The obstruction is stated, and reported once — by
        the checks that failed on every example that raised (they own it: instructions_render for a prompt's
        missing key), else as the pseudo-check ``turns_raised`` with the smallest such example. A blocked search
        reports it alone."""
        report = self.report
        if self._smallest_raised is None or report.examples_raised * 2 <= report.examples_judged:
            return
        owners = sorted(c for c, n in self._fails_raised.items() if n == report.examples_raised)
        if report.blocked_keys:
            report.findings = [self._finding(check, self._smallest[check][1]) for check in owners]
        how = max(report.raised_reasons.items(), key=lambda item: item[1])[0]
        report.obstruction = (f"turns raised in {report.examples_raised} of {report.examples_judged} examples "
                              f"(mostly {how}; reported as {', '.join(owners) or TURNS_RAISED}): the checks judged "
                              f"turns that ended there, so the search says little about the rest of the target "
                              f"until that is fixed")
        if not owners:
            after_s, after_examples, _ = self._first[TURNS_RAISED]
            report.findings.insert(0, Finding(check=TURNS_RAISED, shape=how, plan=self._smallest_raised[1],
                                              after_s=after_s, after_examples=after_examples))

    def _out_of_time(self) -> bool:
        return self.budget.time_s is not None and time.perf_counter() - self._started > self.budget.time_s

    # --- the rounds --------------------------------------------------------------------------------------------

    def __enter__(self) -> Explorer:
        """With ``jobs`` > 1: the worker processes, for ``explore`` and then ``judge_all`` (the writer's runs)."""
        if self._in_workers and self._pool is None:
            from .pool import Pool, run_scenario

            self._pool = Pool(self.options, self.checks, self.jobs, run=self._run_scenario or run_scenario,
                              timeout_s=self.example_timeout)
        return self

    @property
    def _in_workers(self) -> bool:
        return self.jobs > 1 or self.example_timeout is not None

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def explore(self) -> Report:
        if self._in_workers and self._pool is None:
            with self:
                return self.explore()
        report = self._explore()
        if self._pool is not None:
            self._pool.drop_ahead()  # what the search did not ask for will never be asked for
            report.unused_runs = self._pool.runs - report.tried
        return report

    def judge_all(self, scenarios: list[Scenario]) -> list[Verdict]:
        """The verdicts of scenarios outside the search (the writer's confirmations), in the workers if any."""
        if self._pool is None:
            from .pool import run_scenario

            return [judge((self._run_scenario or run_scenario)(s, self.options), self.checks) for s in scenarios]
        keys = [hashlib.sha256(s.model_dump_json().encode()).hexdigest() for s in scenarios]
        jobs = dict(zip(keys, scenarios))
        self._pool.ahead(jobs.items())
        verdicts = {key: self._pool.get(key, scenario) for key, scenario in jobs.items()}
        return [verdicts[key] for key in keys]

    def _explore(self) -> Report:
        self._started = time.perf_counter()
        try:
            self._search()
        except _Blocked:  # before any finding was kept: the obstruction alone is reported (``_obstruction``)
            pass
        self._obstruction()
        self.report.elapsed_s = time.perf_counter() - self._started
        return self.report

    def _search(self) -> None:
        found: dict[str, Plan] = {}
        while not self._out_of_time() and not self.checks <= set(found):
            pending = self._pending(found)
            if pending:  # seen failing beside a round's target: shrunk structurally from the smallest plan seen
                found[pending[0]] = self._polish(pending[0], self._smallest[pending[0]][1], self.budget.shrink_runs)
                continue
            if self._generation_spent():
                break
            check, plan, spent = self._round(frozenset(found))
            if check is None:
                break
            found[check] = self._polish(check, plan, self.budget.shrink_runs - spent)
        for check in self._pending(found):  # out of time: as seen
            found[check] = self._smallest[check][1]
        self.report.findings += [self._finding(check, plan) for check, plan in found.items()]

    def _finding(self, check: str, plan: Plan) -> Finding:
        after_s, after_examples, shape = self._first[check]
        smallest = self._smallest[check][1]  # maybe smaller (by our measure) than Hypothesis' minimum
        best = smallest if smallest.size(self.library) < plan.size(self.library) else plan
        return Finding(check=check, shape=shape, plan=best, after_s=after_s, after_examples=after_examples)

    def _pending(self, found: dict[str, Plan]) -> list[str]:
        """Checks some run failed that no round has shrunk yet."""
        return [check for check in self._smallest if check not in found]

    def _generation_spent(self) -> bool:
        return self.budget.max_examples is not None and self._generated >= self.budget.max_examples

    def _polish(self, check: str, plan: Plan, budget: int) -> Plan:
        """``plan`` after the structural pass (harness/explore/shrink.py), within ``budget`` runs (a hang is kept
        as found: each candidate could cost the whole example timeout)."""
        from .shrink import polish

        if check == TARGET_HUNG:
            return plan

        runs = 0

        def still_fails(candidate: Plan) -> bool | None:
            nonlocal runs
            if candidate.key() not in self._cache:
                if runs >= budget or self._out_of_time():
                    return None
                runs += 1
                self.report.shrink_runs += 1
            return check in self.verdict(candidate).failing

        return polish(plan, self.library, still_fails, ahead=lambda plans: self._ahead(plans, soon=True))

    def _round(self, known: frozenset[str]) -> tuple[str | None, Plan, int]:
        state = _Round()
        errors: dict[str, type[_NewFailure]] = {}

        def failure(check: str) -> type[_NewFailure]:
            if check not in errors:
                errors[check] = type(f"Fails_{check}", (_NewFailure,), {})
            return errors[check]

        def test(plan: Plan) -> None:
            if state.coming is not None:  # the dry run of ``_coming``: note the example, run nothing
                return _note(state.coming, plan)
            cached = plan.key() in self._cache
            if not cached:
                if state.target is None:
                    if self._out_of_time() or self._generation_spent():
                        raise _Exhausted()
                    self._generated += 1
                elif self._out_of_time() or state.shrink_runs >= self.budget.shrink_runs // 2:
                    return  # the shrink budget is spent: untried candidates count as passing
                else:
                    state.shrink_runs += 1
                    self.report.shrink_runs += 1
            verdict = self.verdict(plan)
            if state.target is None:
                new = [c for c in verdict.failing if c not in known and c != TARGET_HUNG]  # a hang: not shrunk
                state.target = (HARNESS_BUG if HARNESS_BUG in new else new[0]) if new else None
            if state.target is not None and state.target in verdict.failing:
                raise failure(state.target)(state.target, plan)

        def _note(coming: dict[str, Plan], plan: Plan) -> None:
            key = plan.key()
            if key in self._cache or key in coming:
                return
            if len(coming) >= state.lookahead:
                raise _Exhausted()
            coming[key] = plan

        # Every round the same settings (max_examples steers Hypothesis' generation), so each draws the same
        # sequence of examples from the seed: a round replays the earlier ones (cached) and goes on from there.
        max_examples = self.budget.max_examples if self.budget.max_examples is not None else 100_000
        remaining = None if self.budget.max_examples is None else self.budget.max_examples - self._generated
        state.lookahead = remaining if remaining is not None else LOOKAHEAD
        self._ahead(self._coming(test, state, known, max_examples))
        try:
            self._given(test, known, max_examples)()
        except _Exhausted:
            return None, Plan(1, (), ()), state.shrink_runs
        except _NewFailure as exc:  # Hypothesis replays the minimal example last: this is it
            return exc.check, exc.plan, state.shrink_runs
        return None, Plan(1, (), ()), state.shrink_runs

    def _given(self, test: Callable[[Plan], None], known: frozenset[str], max_examples: int, *,
               read_only: bool = False) -> Callable[[], None]:
        """``test`` as the round's Hypothesis test: its seed and settings, and an example database of its own
        (a folder per target, seed, checks searched and checks already found)."""
        from hypothesis import HealthCheck, Phase, Verbosity, example, given, seed, settings
        from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

        from .strategies import plans, seed_plans

        database = None
        if self.database is not None:
            round_key = f"{self.model.spec}|{self.seed}|{','.join(sorted(self.checks))}|{','.join(sorted(known))}"
            folder = self.database / hashlib.sha256(round_key.encode()).hexdigest()[:16]
            database = DirectoryBasedExampleDatabase(str(folder))
            if read_only:
                database = ReadOnlyDatabase(database)
        wrapped = given(plans(self.model, self.library, crash=self.crash))(test)
        for plan in reversed(seed_plans(self.model, self.library, crash=self.crash)):  # tried first, in this order (Phase.explicit)
            wrapped = example(plan)(wrapped)
        # settings outermost: @seed alone turns the database off.
        return settings(
            max_examples=max(1, max_examples), deadline=None, database=database,
            phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck), print_blob=False, verbosity=Verbosity.quiet,
            derandomize=False)(seed(self.seed)(wrapped))

    def _coming(self, test: Callable[[Plan], None], state: _Round, known: frozenset[str],
                max_examples: int) -> list[Plan]:
        """The next examples the round generates (``state.lookahead`` of them; none without a pool): its own test
        function, seed, settings (``max_examples`` too: it steers generation) and database (read only), in a
        dry run where every example passes. Until its first failure, the round draws exactly these."""
        if self._pool is None:
            return []
        if self.database is None and self._sequence is not None:  # no database to replay: one sequence for all
            return [plan for key, plan in self._sequence.items() if key not in self._cache][:state.lookahead]
        state.coming = {}
        try:
            self._given(test, known, max_examples, read_only=True)()
        except _Exhausted:
            pass
        coming, state.coming = state.coming, None
        if self.database is None:
            self._sequence = coming
        return list(coming.values())
