"""Small things a new user trips over, each fixed and kept fixed.

* ``python -m harness`` is the CLI;
* ``python -m harness.scenario.schema --help`` is help (not a file named ``--help``), and the schema goes to
  ``scenarios/`` under the current directory, never into the installed package;
* the Markdown table keeps one cell per column when a scenario is in error (no checks at all);
* a green run logs no error: the model guard ends a blocked turn without raising out of a plugin;
* ``record`` writes the same reports as ``run``;
* a scenario's run pays for nothing it does not use: no repr of its whole result, no sub-LM client it never calls,
  no second scrubbing of a replayed request.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import EXIT_OK, main
from harness.llm.modes import LlmMode
from harness.report import render_markdown
from harness.result import RunReport, ScenarioResult
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import schema
from harness.scenario.loader import load_scenario
from tests.harness.test_reports import make_report

ROOT = Path(__file__).resolve().parents[2]


def test_python_dash_m_harness_is_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rlm-conformance ")


# --- the schema command ------------------------------------------------------------------------------------------


def test_schema_help_is_help_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        schema.main(["--help"])
    assert done.value.code == 0
    assert "--output" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_schema_goes_to_the_projects_scenarios_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    shipped = schema.SCHEMA_PATH.stat().st_mtime_ns
    assert schema.main([]) == 0
    assert (tmp_path / "scenarios" / "scenario.schema.json").read_text(encoding="utf-8") == schema.render_json_schema()
    assert schema.SCHEMA_PATH.stat().st_mtime_ns == shipped  # the package's folder is not where it writes
    assert not schema.DEFAULT_OUTPUT.is_absolute()


def test_schema_without_a_scenarios_folder_asks_for_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        schema.main([])
    assert done.value.code == 2
    assert "--output PATH" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
    assert schema.main(["--output", "elsewhere/s.json"]) == 0
    assert json.loads((tmp_path / "elsewhere" / "s.json").read_text(encoding="utf-8")) == schema.scenario_json_schema()


# --- the Markdown table --------------------------------------------------------------------------------------------


def _table(markdown: str) -> list[list[str]]:
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    return [re.split(r"(?<!\\)\|", row)[1:-1] for row in rows]


def test_markdown_rows_have_the_headers_cells_when_a_scenario_is_in_error() -> None:
    report = make_report()  # good, bad, and 'broken' in error with no checks
    header, delimiter, *rows = _table(render_markdown(report))
    assert len(delimiter) == len(header) and all(len(row) == len(header) for row in rows)
    [broken] = [row for row in rows if row[0].strip() == "broken"]
    assert broken[1].strip() == "⚠️ error" and {cell.strip() for cell in broken[2:]} == {"·"}


def test_markdown_table_of_a_run_where_every_scenario_is_in_error() -> None:
    [_, _, broken] = make_report().results
    report = RunReport(results=(broken,), started_at="2026-01-02T03:04:05+00:00", machine="ci", tool_version="0")
    table = _table(render_markdown(report))
    assert table == [[" scenario ", " result "], [" --- ", " --- "], [" broken ", " ⚠️ error "]]


# --- a green run is quiet -----------------------------------------------------------------------------------------


def test_a_blocked_answer_ends_the_turn_without_an_error_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    scenario = load_scenario(ROOT / "scenarios" / "model_safety_block.yaml")
    result: ScenarioResult = run_scenario(scenario, RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.ok, [(c.name, c.explanation) for c in result.checks if c.failed]
    [turn] = result.trace.turns
    assert turn.outcome.termination == "model_error" and "finish reason SAFETY" in turn.outcome.error
    assert turn.outcome.crash is None  # the model refused; nothing raised
    errors = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_run_scenario_never_writes_out_its_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """On leaving, asyncio.run (Python 3.11) restores its SIGINT handler through signal's enum conversion, which
    formats its main task's repr: a task that returned the ScenarioResult had it written out whole, twice (~2 ms
    of every scenario). run_scenario's task returns None, the result boxed."""
    written: list[str] = []
    monkeypatch.setattr(ScenarioResult, "__repr__", lambda self: written.append(self.scenario) or "ScenarioResult")
    result = run_scenario(load_scenario(ROOT / "scenarios" / "exit_loop.yaml"), RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.ok and written == []


@pytest.mark.parametrize("name, clients", [("exit_loop", 0), ("llm_query", 1)])
def test_the_sub_lm_client_is_built_only_for_a_scenario_that_calls_it(name: str, clients: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A google-genai client takes milliseconds to build, and most scenarios make no sub-LM or countTokens call."""
    from harness.llm.modes import ModelEndpoint

    built: list[object] = []
    genai_client = ModelEndpoint.genai_client
    monkeypatch.setattr(ModelEndpoint, "genai_client", lambda self, **kw: built.append(1) or genai_client(self, **kw))
    result = run_scenario(load_scenario(ROOT / "scenarios" / f"{name}.yaml"), RunOptions(llm_mode=LlmMode.SCRIPTED))
    assert result.ok and len(built) == clients


def test_replay_scrubs_each_request_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each recorded request is scrubbed once as the cassette loads (vcrpy's), each replayed one once more: vcrpy
    alone would filter a replayed request four times (harness/llm/cassettes.py's filter_each_request_once)."""
    import yaml

    from harness.llm import cassettes

    scrubbed: list[object] = []
    scrub = cassettes.scrub_request
    monkeypatch.setattr(cassettes, "scrub_request", lambda request, **kw: scrubbed.append(1) or scrub(request, **kw))
    result = run_scenario(load_scenario(ROOT / "scenarios" / "llm_query.yaml"), RunOptions())
    interactions = yaml.safe_load((ROOT / "cassettes" / "llm_query.yaml").read_text(encoding="utf-8"))["interactions"]
    assert result.ok and len(interactions) > 1
    assert len(scrubbed) == 2 * len(interactions)


# --- record writes reports ------------------------------------------------------------------------------------------


def test_record_writes_the_reports_run_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    (tmp_path / "scenarios").mkdir()
    text = (ROOT / "scenarios" / "exit_loop.yaml").read_text(encoding="utf-8")
    (tmp_path / "scenarios" / "exit_loop.yaml").write_text(text, encoding="utf-8")
    assert main(["record", "--no-progress"]) == EXIT_OK
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "conformance.html", "conformance.json", "conformance.md", "conformance.xml"]
    assert json.loads((tmp_path / "reports" / "conformance.json").read_text(encoding="utf-8"))["extra"]["command"] \
        == "record"
    capsys.readouterr()
    assert main(["record", "--no-progress", "--reports-dir", "out", "--format", "markdown"]) == EXIT_OK
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["conformance.md"]
    assert "Reports written to out/: conformance.md" in capsys.readouterr().out
