"""What explore generates, without running an agent: the behaviour library as data, tool arguments from their
schemas, a plan as a padded scenario, trimming, and the command's usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from harness.cli import main
from harness.explore.library import LibraryError, load_library
from harness.explore.plan import (ANSWER_DELAY_S, MODEL_TIMEOUT_S, Plan, SessionPlan, StepPlan, overran, steps_used,
                                  to_scenario, trimmed)
from harness.explore.shrink import candidates
from harness.explore.strategies import arguments, plans
from harness.explore.target_model import AgentModel, ToolModel, model_from
from harness.targets.profile import TargetProfile

DELEGATE = ToolModel("delegate_code_results", {"type": "object", "required": ["code", "instruction"], "properties": {
    "code": {"type": "string"}, "instruction": {"type": "string"}}})
SNIPPET = ToolModel("save_snippet", {"type": "object", "required": ["name", "tags", "count"], "properties": {
    "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
    "count": {"type": "integer"}, "optional": {"type": "string"}}})
TOOL_MODEL = model_from("reference", TargetProfile(analyst="analyst", delegate_tool="delegate_code_results",
                                                   exit_tool="exit_loop"),
                        (AgentModel("analyst", (DELEGATE, SNIPPET, ToolModel("exit_loop", {}))),
                         AgentModel("processor")))
KEY_MODEL = model_from("pkg.agent:app", TargetProfile(analyst="coder", delegation_key="generated_code",
                                                      preview_chars=40),
                       (AgentModel("coder"), AgentModel("formatter")))


def test_the_library_is_data_a_user_extends(tmp_path: Path) -> None:
    library = load_library()
    names = [b.name for b in library.behaviours]
    assert names[0] == "small_output" and {"huge_output", "final", "raise", "llm_query"} <= set(names)
    extra = tmp_path / "mine.yaml"
    extra.write_text("delegation_text: \"<code>{code}</code>\"\nbehaviours:\n"
                     "  - {name: raise, code: \"1/0\"}\n  - {name: spark_sql, code: \"spark.sql('select 1')\"}\n",
                     encoding="utf-8")
    mine = load_library(extra)
    assert mine.named("raise").code == "1/0" and [b.name for b in mine.behaviours][-1] == "spark_sql"
    assert mine.wrap("x = 1") == "<code>x = 1</code>"
    extra.write_text("behaviours:\n  - {name: Bad Name, code: x}\n", encoding="utf-8")
    with pytest.raises(LibraryError, match="lowercase"):
        load_library(extra)
    extra.write_text("behaviours:\n  - {name: probe, code: x, escape_probe: maybe}\n", encoding="utf-8")
    with pytest.raises(LibraryError, match=r"behaviours\[0\]: escape_probe 'maybe' must be true or false"):
        load_library(extra)


@settings(max_examples=30, database=None, suppress_health_check=list(HealthCheck))
@given(arguments(SNIPPET.schema))
def test_tool_arguments_follow_the_declared_schema(args: dict) -> None:
    assert set(args) == {"name", "tags", "count"}
    assert isinstance(args["name"], str) and isinstance(args["count"], int)
    assert all(isinstance(tag, str) for tag in args["tags"])


@settings(max_examples=30, database=None, suppress_health_check=list(HealthCheck))
@given(plans(TOOL_MODEL, load_library()))
def test_every_generated_plan_is_a_valid_scenario_whose_script_cannot_run_out(plan: Plan) -> None:
    scenario = to_scenario(plan, TOOL_MODEL, load_library(), name="x", description="x")
    iterations = plan.turns * plan.max_iterations
    assert len(scenario.script["analyst"]) >= len(plan.steps) + 3 * iterations
    assert len(scenario.script["processor"]) >= 3 * iterations
    calls = [s for s in scenario.script["analyst"] if getattr(s, "call", None) == "delegate_code_results"]
    assert all(set(c.args) == {"code", "instruction"} for c in calls)


def test_code_handed_over_by_a_key_is_the_analysts_answer_with_the_preview_limit_filled_in() -> None:
    plan = Plan(max_iterations=1, sessions=(SessionPlan("user_1", 1, ("app:explore_shared", "explore_cleared")),),
                steps=(StepPlan(kind="delegate", behaviour="output_at_preview_limit"),), context=False)
    scenario = to_scenario(plan, KEY_MODEL, load_library(), name="x", description="x")
    text = scenario.script["coder"][0].text
    assert text.startswith("```repl\n") and "* (40 // 10)" in text
    assert scenario.sessions[0].initial_state == {"app:explore_shared": "shared", "explore_cleared": None}
    assert scenario.context is None


def test_a_behaviours_limits_become_the_scenarios() -> None:
    """past_executor_timeout sleeps 5 s under a 1 s executor timeout: without its limit, the target's default
    timeout let every such example sleep the whole 5 s (what made explore's slowest examples slow)."""
    def limits(*behaviours: str):  # noqa: ANN202
        plan = Plan(max_iterations=1, sessions=(SessionPlan("user_1", 1),),
                    steps=tuple(StepPlan(kind="delegate", behaviour=b) for b in behaviours))
        return to_scenario(plan, TOOL_MODEL, load_library(), name="x", description="x").limits.executor_timeout_s

    assert limits("small_output") is None
    assert limits("small_output", "past_executor_timeout") == 1


def test_a_timeout_fault_answers_past_the_client_timeout_the_scenario_sets_and_late_answers_stay_inside() -> None:
    """A generated timeout is a ``slow`` answer past the 1 s client timeout the written scenario sets (the mode's
    2 s would make each such example wait 2 s); a late answer comes 0.2 s late, well inside it."""
    plan = Plan(max_iterations=1, sessions=(SessionPlan("user_1", 1),),
                steps=(StepPlan(kind="delegate", behaviour="small_output", delay=ANSWER_DELAY_S),
                       StepPlan(kind="fault", tool="timeout")))
    scenario = to_scenario(plan, TOOL_MODEL, load_library(), name="x", description="x")
    late, timeout = scenario.script["analyst"][:2]
    assert late.call == "delegate_code_results" and late.delay == ANSWER_DELAY_S
    assert timeout.fault == "slow" and timeout.delay > scenario.limits.model_timeout_s == MODEL_TIMEOUT_S
    assert ANSWER_DELAY_S < MODEL_TIMEOUT_S / 2
    assert plan.describe().endswith("steps [delegate:small_output+0.2s, fault:timeout]")
    on_time = Plan(1, plan.sessions, (StepPlan(kind="delegate", behaviour="small_output"), plan.steps[1]))
    assert on_time in list(candidates(plan, load_library()))  # the shrinker tries the answer on time
    assert on_time.size(load_library()) < plan.size(load_library())
    no_timeout = Plan(1, plan.sessions, plan.steps[:1])
    assert to_scenario(no_timeout, TOOL_MODEL, load_library(), name="x", description="x").limits.model_timeout_s is None


def test_the_written_script_keeps_only_the_steps_the_target_asked_for() -> None:
    plan = Plan(max_iterations=2, sessions=(SessionPlan("user_1", 1),), steps=(StepPlan(kind="text"),))
    scenario = to_scenario(plan, KEY_MODEL, load_library(), name="x", description="x")
    problems = [f"scenario x.yaml:9: {n} step(s) of script.{agent} from index {i} on were never asked for: ..."
                for agent, n, i in (("coder", 9, 2), ("formatter", 10, 0), ("sub_lm", 10, 0))]
    used = steps_used(problems)
    assert used == {"coder": 2, "formatter": 0, "sub_lm": 0}
    assert {k: len(v) for k, v in trimmed(scenario, used).script.items()} == {"coder": 2}
    assert not overran(problems)
    assert overran(["... call index 3 got HTTP 400 from the scripted endpoint, an error the script does not ..."])


def test_structural_shrinking_tries_the_biggest_reductions_first() -> None:
    plan = Plan(max_iterations=2, sessions=(SessionPlan("user_2", 2), SessionPlan("user_1", 1)),
                steps=(StepPlan(kind="delegate", behaviour="raise"),))
    first = [c.describe() for c in candidates(plan, load_library())][:4]
    assert first == ["sessions [user_1x1], max_iterations 2, steps [delegate:raise]",
                     "sessions [user_2x2], max_iterations 2, steps [delegate:raise]",
                     "sessions [user_2x1, user_1x1], max_iterations 2, steps [delegate:raise]",
                     "sessions [user_2x2, user_1x1], max_iterations 2, steps []"]


@pytest.mark.parametrize("argv", [["--check", "no_such_check"], ["--behaviours", "/nonexistent.yaml"],
                                  ["--target", "no_module_here:app"]])
def test_usage_errors_exit_2_naming_the_flag(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--no-progress", *argv]) == 2
    assert argv[0] in capsys.readouterr().err


def test_max_examples_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--max-examples", "0"]) == 2
    assert "--max-examples" in capsys.readouterr().err



@pytest.mark.parametrize(("flags", "code"), [([], 0), (["--fail-on-find"], 1)])
def test_a_finding_exits_1_only_with_fail_on_find(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  flags: list[str], code: int) -> None:
    """The documented exit codes (docs/explore.md): 0 nothing found or no --fail-on-find, 1 found, 2 usage (above).
    The run is a stand-in failing one check on every conversation: only the exit code is judged here."""
    from harness.checks.base import CheckResult, Status
    from harness.result import ScenarioResult

    def failing(scenario, options):  # noqa: ANN001, ANN202
        check = CheckResult("none_deletes", Status.FAIL, "a None value was stored", ("key 'x' kept None",))
        return ScenarioResult(scenario=scenario.name, description="", target="reference", llm_mode="scripted",
                              session_service="delta", checks=(check,), trace=None, duration_s=0.0)

    monkeypatch.setattr("harness.run.runner.run_scenario", failing)
    assert main(["explore", "--no-progress", "--no-database", "--example-timeout", "0", "--max-examples", "1", "--out", str(tmp_path),
                 *flags]) == code
    assert (tmp_path / "found_reference_none_deletes.yaml").is_file()


def test_transfers_are_those_adk_allows_and_become_transfer_calls() -> None:
    from google.adk.agents import LlmAgent, LoopAgent

    from harness.explore.target_model import _transfers

    a, b = LlmAgent(name="a", model="gemini-2.5-flash"), LlmAgent(name="b", model="gemini-2.5-flash",
                                                                   disallow_transfer_to_peers=True)
    root = LlmAgent(name="coordinator", model="gemini-2.5-flash", sub_agents=[a, b])
    assert (_transfers(root), _transfers(a), _transfers(b)) == (("a", "b"), ("coordinator", "b"), ("coordinator",))
    looped = LlmAgent(name="looped", model="gemini-2.5-flash")
    LoopAgent(name="loop", sub_agents=[looped, LlmAgent(name="sibling", model="gemini-2.5-flash")])
    assert _transfers(looped) == ()  # under a LoopAgent: no sibling transfer (ADK 2.x refuses it)

    model = model_from("pkg.agent:app", TargetProfile(analyst="coordinator"),
                       (AgentModel("coordinator", transfers=("a", "b")), AgentModel("a"), AgentModel("b")))
    plan = Plan(max_iterations=1, sessions=(SessionPlan("user_1", 1),), steps=(StepPlan(kind="transfer", tool="b"),))
    step = to_scenario(plan, model, load_library(), name="x", description="x").script["coordinator"][0]
    assert (step.call, step.args) == ("transfer_to_agent", {"agent_name": "b"})
    assert StepPlan(kind="text") in [c.steps[0] for c in candidates(plan, load_library()) if c.steps]  # shrinks to
    drawn = set()

    @given(plans(model, load_library()))
    @settings(max_examples=60, suppress_health_check=list(HealthCheck), database=None)
    def collect(p: Plan) -> None:
        drawn.update(s.tool for s in p.steps if s.kind == "transfer")

    collect()
    assert drawn <= {"a", "b"} and drawn


def test_a_delegation_text_the_profile_would_not_count_is_a_usage_error(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """With delegation_pattern, code explore writes through the key must match it: else every generated delegation
    is judged a plain answer and the search runs blind. The error names the file, both settings and the fix."""
    profile = tmp_path / "rlm-profile.yaml"
    profile.write_text("name: output_key_rlm\ntarget: tests.user_agents.output_key_rlm.agent:app\nanalyst: analyst\n"
                       "delegation_key: pending_code\ndelegation_pattern: '```'\njob_builder: runner\n",
                       encoding="utf-8")
    behaviours = tmp_path / "mine.yaml"
    behaviours.write_text("delegation_text: \"CODE:\\n{code}\"\nbehaviours: []\n", encoding="utf-8")
    argv = ["explore", "--no-progress", "--no-database", "--profile", str(profile), "--out", str(tmp_path)]
    assert main([*argv, "--behaviours", str(behaviours)]) == 2
    err = capsys.readouterr().err
    assert f"{behaviours}: delegation_text 'CODE:\\n{{code}}' does not match" in err
    assert "delegation_pattern '```'" in err and "Fix: " in err


def test_escape_probes_are_seed_conversations_only_and_run_under_the_watch(tmp_path: Path) -> None:
    """An escape_probe behaviour (the built-in one, or a user's) is tried once, in a seed conversation of its own,
    whose scenario sets escape_probe; it is never drawn (it forks 512 processes where nothing stops it)."""
    from harness.explore.strategies import seed_plans

    extra = tmp_path / "mine.yaml"
    extra.write_text("behaviours:\n  - {name: my_escape, escape_probe: true, code: \"open('/etc/x', 'w')\"}\n",
                     encoding="utf-8")
    library = load_library(extra)
    probes = [p for p in seed_plans(TOOL_MODEL, library)
              if any(s.behaviour in ("escape_attempts", "my_escape") for s in p.steps)]
    assert [[s.behaviour for s in p.steps] for p in probes] == [["escape_attempts"], ["my_escape"]]
    scenario = to_scenario(probes[0], TOOL_MODEL, library, name="probe", description="d")
    assert scenario.escape_probe is True
    assert to_scenario(seed_plans(TOOL_MODEL, library)[0], TOOL_MODEL, library, name="x",
                       description="d").escape_probe is False

    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    from harness.explore.strategies import delegation

    with pytest.raises(NoSuchExample):  # every behaviour the delegations can draw, searched for a probe
        find(delegation(TOOL_MODEL, library), lambda step: step.behaviour in ("escape_attempts", "my_escape"),
             settings=settings(max_examples=500, database=None))


@pytest.mark.parametrize(("behaviour", "scenario"), [("list_environment", "executor_environment"),
                                                     ("escape_attempts", "executor_escape_probe")])
def test_the_librarys_executor_probes_are_the_recorded_scenarios_code(behaviour: str, scenario: str) -> None:
    """The probes live twice: as recorded scenarios (whose cassettes replay the code word for word) and in the
    library explore draws from (part of the installed harness, which cannot read the repository's scenarios).
    The checks parse what the probe prints, so the two must not drift apart."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((root / "scenarios" / f"{scenario}.yaml").read_text(encoding="utf-8"))
    [recorded] = [step["args"]["code"] for steps in data["script"].values() for step in steps
                  if "code" in step.get("args", {})]
    assert load_library().named(behaviour).code.strip() == recorded.strip()


def test_a_crash_plan_becomes_a_crash_case_and_its_point_shrinks_toward_the_first_event() -> None:
    from harness.explore.strategies import seed_plans

    library = load_library()
    plan = Plan(1, (SessionPlan("u", 1),), (StepPlan(kind="delegate", behaviour="small_output"),), crash=("before", 4))
    scenario = to_scenario(plan, TOOL_MODEL, library, name="x", description="d")
    assert scenario.crash is not None and scenario.crash.point == ("before", 4)
    assert plan.describe().endswith("crash before #4")
    earlier = Plan(1, plan.sessions, plan.steps, crash=("before", 1))
    assert earlier.size(library) < plan.size(library)
    assert to_scenario(Plan(1, plan.sessions, plan.steps), TOOL_MODEL, library, name="x", description="d").crash is None
    seeds = seed_plans(TOOL_MODEL, library, crash=True)
    assert seeds and all(s.crash == ("after", 3) for s in seeds)
    assert all(s.crash is None for s in seed_plans(TOOL_MODEL, library))


@settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
@given(plans(TOOL_MODEL, load_library(), crash=True))
def test_every_crash_plan_draws_a_point(plan: Plan) -> None:
    assert plan.crash is not None and plan.crash[0] in ("after", "before") and 0 <= plan.crash[1] <= 10
