"""docs/your-agent.md, executed: its files written and its `$` commands run, in order, in a fresh folder.

The folder starts with nothing but the example agent's packages (copied as a user's own top-level packages),
so the page is checked the way a newcomer follows it: `init`, a scripted run, the profile and a scenario
from the page, record, replay, pytest, then the broken variant failing the checks the page names.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.inner_pytest import InnerProject, project_modules

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "your-agent.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
EXPECTATION = re.compile(r"#\s*exit\s+(\d+)(?:;\s*names:\s*(.+))?$")


@dataclass(frozen=True)
class Step:
    kind: str  # "file" or "command"
    text: str
    path: str | None = None
    exit_code: int = 0
    names: tuple[str, ...] = ()


CODE_EXECUTOR_EXAMPLE = "## Worked example: an agent on ADK's own code executor"
"""Where the page's second project starts (tests/docs/test_your_agent_code_executor.py runs it)."""


def doc_steps(text: str) -> list[Step]:
    """Files (```yaml blocks whose first line is '# file: PATH') and commands ('$ ' lines of ```console blocks)
    of the page's main project (up to the code-executor example, which runs in a folder of its own)."""
    steps: list[Step] = []
    for language, body in FENCE.findall(text.split(CODE_EXECUTOR_EXAMPLE)[0]):
        first, _, rest = body.partition("\n")
        if language == "yaml" and first.startswith("# file: "):
            steps.append(Step("file", rest, path=first.removeprefix("# file: ").strip()))
        elif language == "console":
            for line in body.splitlines():
                if not line.startswith("$ "):
                    continue
                command, _, comment = line[2:].partition("  #")
                expected = EXPECTATION.search("#" + comment) if comment else None
                steps.append(Step("command", command.strip(),
                                  exit_code=int(expected.group(1)) if expected else 0,
                                  names=tuple(n.strip() for n in expected.group(2).split(","))
                                  if expected and expected.group(2) else ()))
    return steps


def test_the_page_has_the_steps_a_newcomer_follows() -> None:
    steps = doc_steps(DOC.read_text(encoding="utf-8"))
    commands = [s.text.split()[0:2] for s in steps if s.kind == "command"]
    assert ["rlm-conformance", "init"] in commands and ["rlm-conformance", "record"] in commands
    assert any(s.exit_code == 1 and s.names for s in steps), "the page must end with a red run naming its checks"
    assert [s.path for s in steps if s.kind == "file"] == ["rlm-profile.yaml", "scenarios/two_turns.yaml"]


OFFLINE_UNSET = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER",
                 "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def run_command(words: list[str], folder: Path) -> tuple[int, str]:
    """A `$` line of the page, in this process (the commands' own code is what the page promises; a subprocess
    each would add ~3 s of imports): `rlm-conformance` is the CLI's ``main``, `pytest` is ``pytest.main``."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if words[0] == "rlm-conformance":
                from harness.cli import main

                code = main(words[1:])
            else:
                result = InnerProject(folder).run(*words[1:])
                code = int(result.ret)
                print("\n".join([*result.outlines, *result.errlines]))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue()


def test_every_command_of_the_page_does_what_the_page_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "project"  # the user's folder (pytest's runs keep their --basetemp beside it)
    for package in ("seed004_rlm", "seed004_rlm_broken"):
        shutil.copytree(ROOT / "examples" / package, folder / package,
                        ignore=shutil.ignore_patterns("__pycache__", "scenarios", "rlm-profile.yaml"))
    for name in OFFLINE_UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))  # the user's packages, importable from their folder
    with project_modules(folder):  # the copied packages are dropped after, an outer module of their name kept
        for step in doc_steps(DOC.read_text(encoding="utf-8")):
            if step.kind == "file":
                target = folder / step.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(step.text, encoding="utf-8")
                continue
            code, output = run_command(shlex.split(step.text), folder)
            assert code == step.exit_code, f"$ {step.text}\nexit {code}\n{output[-6000:]}"
            for name in step.names:
                assert name in output, f"$ {step.text}: the output does not name {name}\n{output[-6000:]}"
    assert (folder / "cassettes" / "seed004_rlm" / "two_turns.yaml").is_file()
    assert (folder / "snapshots" / "seed004_rlm" / "two_turns.json").is_file()


@pytest.fixture(autouse=True)
def _no_leftover_network_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
