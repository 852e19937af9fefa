"""docs/your-agent.md's worked example on ADK's own code executor, executed: its files written and its `$`
commands run, in order, in a fresh folder that starts empty (the page's agent is one of its files)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.docs.test_your_agent_doc import (CODE_EXECUTOR_EXAMPLE, DOC, FENCE, OFFLINE_UNSET, doc_steps,
                                            run_command)
from tests.harness.inner_pytest import project_modules

pytestmark = pytest.mark.slow


def example() -> str:
    return CODE_EXECUTOR_EXAMPLE + DOC.read_text(encoding="utf-8").split(CODE_EXECUTOR_EXAMPLE, 1)[1]


def python_files(text: str) -> dict[str, str]:
    """```python blocks whose first line is '# file: PATH'."""
    files = {}
    for language, body in FENCE.findall(text):
        first, _, rest = body.partition("\n")
        if language == "python" and first.startswith("# file: "):
            files[first.removeprefix("# file: ").strip()] = rest
    return files


def test_the_example_runs_as_the_page_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = example()
    folder = tmp_path / "project"
    for path, source in python_files(text).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(source, encoding="utf-8")
    for name in OFFLINE_UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    # The example's own steps: the page's parser reads a text with no heading of the example as the main project.
    steps = doc_steps(re.sub(re.escape(CODE_EXECUTOR_EXAMPLE), "## example", text))
    assert [s.path for s in steps if s.kind == "file"] == ["rlm-profile.yaml"]
    assert any(s.exit_code == 1 and "no_unpersisted_mutation" in s.names for s in steps)
    with project_modules(folder):
        for step in steps:
            if step.kind == "file":
                (folder / step.path).write_text(step.text, encoding="utf-8")
                continue
            code, output = run_command(shlex.split(step.text), folder)
            assert code == step.exit_code, f"$ {step.text}\nexit {code}\n{output[-6000:]}"
            for name in step.names:
                assert name in output, f"$ {step.text}: the output does not name {name}\n{output[-6000:]}"
    assert (folder / "snapshots" / "ce_rlm" / "smoke.json").is_file()
    found = list((folder / "found").glob("*.yaml"))
    assert found and "'user:last_output'" in found[0].read_text(encoding="utf-8")
