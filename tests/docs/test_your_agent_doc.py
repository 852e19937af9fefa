"""docs/your-agent.md, executed: its files written and its `$` commands run, in order, in a fresh folder.

The folder starts with nothing but the example agent's packages (copied as a user's own top-level packages),
so the page is checked the way a newcomer follows it: `init`, a scripted run, the profile and a scenario
from the page, record, replay, pytest, then the broken variant failing the checks the page names.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "your-agent.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
EXPECTATION = re.compile(r"#\s*exit\s+(\d+)(?:;\s*names:\s*(.+))?$")
PROGRAMS = {"rlm-conformance": [sys.executable, "-m", "harness"], "pytest": [sys.executable, "-m", "pytest"]}


@dataclass(frozen=True)
class Step:
    kind: str  # "file" or "command"
    text: str
    path: str | None = None
    exit_code: int = 0
    names: tuple[str, ...] = ()


def doc_steps(text: str) -> list[Step]:
    """Files (```yaml blocks whose first line is '# file: PATH') and commands ('$ ' lines of ```console blocks)."""
    steps: list[Step] = []
    for language, body in FENCE.findall(text):
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


def _offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "PYTEST_ADDOPTS",
                        "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def test_every_command_of_the_page_does_what_the_page_says(tmp_path: Path) -> None:
    for package in ("seed004_rlm", "seed004_rlm_broken"):
        shutil.copytree(ROOT / "examples" / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "scenarios", "rlm-profile.yaml"))
    env = _offline_env()
    for step in doc_steps(DOC.read_text(encoding="utf-8")):
        if step.kind == "file":
            target = tmp_path / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text, encoding="utf-8")
            continue
        words = shlex.split(step.text)
        done = subprocess.run([*PROGRAMS[words[0]], *words[1:]], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        output = done.stdout + done.stderr
        assert done.returncode == step.exit_code, f"$ {step.text}\nexit {done.returncode}\n{output[-6000:]}"
        for name in step.names:
            assert name in output, f"$ {step.text}: the output does not name {name}\n{output[-6000:]}"
    assert (tmp_path / "cassettes" / "seed004_rlm" / "two_turns.yaml").is_file()
    assert (tmp_path / "snapshots" / "seed004_rlm" / "two_turns.json").is_file()


@pytest.fixture(autouse=True)
def _no_leftover_network_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
