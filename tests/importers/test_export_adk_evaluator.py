"""An eval set written by ``export evalset`` runs in ADK's own evaluator — ``AgentEvaluator.evaluate_eval_set``
and ``adk eval`` — offline: the model's answers are the ones the eval set recorded, served by the suite's scripted
endpoint (harness/importers/recorded_model.py); the agent and its tools run for real. With trajectory criteria
the correct outside agent (tests/user_agents/tool_rlm, as an ADK agent folder) passes and a broken variant of it
(its LoopAgent bounded at 1 round instead of 4: a turn's ``finish`` call falls into the next turn) fails."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from harness.importers.export import export_eval_set
from harness.importers.recorded_model import recorded_model
from harness.run.runner import RunOptions
from harness.scenario.loader import parse_scenario
from tests.importers.test_import_evalset import PROFILE, RECORDED, TOOL_RLM

EVAL_EXTRA = ("ADK's evaluator needs ADK's eval extra (pip install 'google-adk[eval]'), which only `tox -e adk-eval` "
              "installs")
if not os.environ.get("RLM_REQUIRE_ADK_EVAL"):  # tox -e adk-eval sets it: there a missing extra is a failure
    pytest.importorskip("pandas", reason=EVAL_EXTRA)
    pytest.importorskip("rouge_score", reason=EVAL_EXTRA)

pytestmark = pytest.mark.slow  # importing ADK's metric registry (Vertex AI's SDK, rouge) takes a minute here

AGENT = Path(__file__).resolve().parents[1] / "user_agents" / "tool_rlm" / "agent.py"
CORRECT, BROKEN = "roundtrip_correct", "roundtrip_short_loop"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


@pytest.fixture
def agent_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two ADK agent folders (what `adk eval` loads, importable as packages): the correct agent and the broken one."""
    source = AGENT.read_text(encoding="utf-8")
    broken = source.replace("max_iterations=4", "max_iterations=1")
    assert broken != source
    for name, text in ((CORRECT, source), (BROKEN, broken)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
        (tmp_path / name / "agent.py").write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _export(tmp_path: Path) -> Path:
    """The correct tool_rlm agent's two-turn scenario, exported as `export evalset` writes it."""
    scenario = parse_scenario(RECORDED.format(profile=PROFILE), path=str(tmp_path / "math_six_times_seven.yaml"),
                              stem="math_six_times_seven")
    eval_set, refused = export_eval_set([scenario], RunOptions(cassette_dir=tmp_path / "c",
                                                               target="tests.user_agents.tool_rlm.agent:app"), eval_set_id="roundtrip")
    assert not refused, refused
    path = tmp_path / "roundtrip.evalset.json"
    path.write_text(eval_set.model_dump_json(indent=2, exclude_none=True), encoding="utf-8")
    return path


def _evaluate(agent_module: str, eval_set) -> str | None:
    """ADK's AgentEvaluator on each case with that case's recorded answers; its failure message, or None."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    for case in eval_set.eval_cases:
        one = EvalSet(eval_set_id=eval_set.eval_set_id, eval_cases=[case])
        with recorded_model(case, TOOL_RLM):
            try:
                asyncio.run(AgentEvaluator.evaluate_eval_set(agent_module, one, num_runs=1,
                                                             eval_config=EvalConfig(criteria=CRITERIA)))
            except AssertionError as failure:  # how AgentEvaluator reports failed criteria
                return str(failure)
    return None


def test_adk_agent_evaluator_passes_the_correct_agent_and_fails_a_broken_one(tmp_path: Path,
                                                                            agent_folders: Path) -> None:
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    eval_set = load_eval_set_from_file(str(_export(tmp_path)), "roundtrip")  # ADK's own loader
    assert _evaluate(f"{CORRECT}.agent", eval_set) is None
    failure = _evaluate(f"{BROKEN}.agent", eval_set)
    assert failure is not None and "tool_trajectory_avg_score" in failure, failure


def test_adk_eval_command_runs_the_exported_eval_set_offline(tmp_path: Path, agent_folders: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`adk eval AGENT_DIR FILE --config_file_path` (ADK's click command, in-process): every case passes on the
    correct agent; on the broken one it reports a failed case (ADK 2.x also exits 1; 1.x always exits 0)."""
    import json
    import sys

    from click.testing import CliRunner
    from google.adk.cli.cli_tools_click import main as adk

    path = _export(tmp_path)
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    [case] = load_eval_set_from_file(str(path), "roundtrip").eval_cases
    outputs = {}
    for name in (CORRECT, BROKEN):
        # `adk eval` imports the folder as the module `agent` (its agent.py as `agent.agent`): one process per
        # command line, so two folders in one process need those names forgotten in between.
        for module in ("agent", "agent.agent"):
            monkeypatch.delitem(sys.modules, module, raising=False)
        with recorded_model(case, TOOL_RLM):
            done = CliRunner().invoke(adk, ["eval", str(agent_folders / name), str(path), "--config_file_path",
                                            str(config)])
        outputs[name] = (done.exit_code, done.output, done.exception)
    for module in ("agent", "agent.agent"):
        sys.modules.pop(module, None)
    assert "Tests passed: 1" in outputs[CORRECT][1] and "Tests failed: 0" in outputs[CORRECT][1], outputs[CORRECT]
    assert outputs[CORRECT][0] == 0, outputs[CORRECT]
    assert "Tests failed: 1" in outputs[BROKEN][1], outputs[BROKEN]


REFERENCE_MODULE = '''"""reference_agent/agent.py (ADK's entry point) with the scenario's context put where the agent reads it."""
import json
from google.adk.models.google_llm import Gemini
from reference_agent.app import build_app
from reference_agent.backends.sublm import lazy_genai_sub_lm
from reference_agent.backends.tokens import lazy_genai_token_counter
from reference_agent.config import AgentSettings
from reference_agent.wiring import build_local_services

settings = AgentSettings.from_env()
services = build_local_services(
    settings, sub_lm=lazy_genai_sub_lm(settings.model, base_url=settings.gemini_base_url),
    count_tokens=lazy_genai_token_counter(settings.model, base_url=settings.gemini_base_url))
CONTEXT = {context}
if CONTEXT is not None:
    services.put_context(CONTEXT)
app = build_app(services, model=Gemini(model=settings.model, base_url=settings.gemini_base_url))
root_agent = app.root_agent
'''


def test_the_reference_agents_exported_case_replays_in_adk_with_its_context(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference agent appends a history-fold invocation with no user message after each turn; exported as is,
    ADK's evaluator sent it as an empty message and its runner refused it ('No parts in the new_message'). The
    scenario's context is no session state of this agent (it is in its volume) and no eval set field can hold it
    (ADK 1.x forbids extra fields): the agent module ADK loads must be given it. Without it ADK's criteria still pass
    — they score the scripted trajectory, never the state — and only the sub-model call the code never made shows."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig

    from harness.importers.evalset import agent_tree
    from harness.init.project import load_target_app
    from harness.scenario.loader import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "llm_query.yaml")
    eval_set, refused = export_eval_set([scenario], RunOptions(cassette_dir=tmp_path / "c", target="reference"),
                                        eval_set_id="reference")
    assert not refused, refused
    [case] = eval_set.eval_cases
    assert [inv.user_content.parts[0].text for inv in case.conversation] == ["Is the review positive or negative?"]
    assert case.session_input.state == {}  # the context is not session state for this agent

    for name, context in (("ref_with_context", scenario.context), ("ref_without_context", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
        (tmp_path / name / "agent.py").write_text(REFERENCE_MODULE.format(context=repr(context)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RLM_HOME", str(tmp_path / "home"))
    tree = agent_tree(load_target_app("reference", allow_builtin=True))
    unserved = {}
    for name in ("ref_with_context", "ref_without_context"):
        with recorded_model(case, tree, sub_lm=[{"text": "positive"}]) as endpoint:
            # Trajectory only: the turn ends on exit_loop with no final text, and ADK 1.x scores two empty
            # responses 0 on response_match_score.
            asyncio.run(AgentEvaluator.evaluate_eval_set(f"{name}.agent", eval_set, num_runs=1, eval_config=EvalConfig(
                criteria={"tool_trajectory_avg_score": 1.0})))
        unserved[name] = endpoint.unserved()
    assert unserved == {"ref_with_context": {}, "ref_without_context": {"sub_lm": 1}}
