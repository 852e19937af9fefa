"""`adk test` material for the tests, made by ADK itself: fixtures ADK's own ``rebuild_tests`` writes for an outside
agent (tests/user_agents/digest_rlm) with a scripted model patched onto ``BaseLlm`` (as ADK's own replay patches its
mock), and ADK's own runner (pytest over ``google.adk.cli.agent_test_runner``, what `adk test` runs) as a subprocess.

Regenerate the committed fixture (ADK 2.x): ``python -m tests.importers.adk_test_agents``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIGEST_DIR = ROOT / "tests" / "user_agents" / "digest_rlm"
FIXTURE = DIGEST_DIR / "tests" / "digest_twice.json"
MESSAGES = ("What is six times seven?", "And plus one?")
# The coder's model answers, in order, as Content JSON. In the first turn it once answers without delegating (the
# loop's second iteration): a digest that re-digests stale output (broken.py's stale_app) shows there.
ANSWERS: tuple[dict[str, Any], ...] = (
    {"role": "model", "parts": [{"functionCall": {"name": "run_code", "args": {"code": "print(6 * 7)"}}}]},
    {"role": "model", "parts": [{"text": "Running it."}]},
    {"role": "model", "parts": [{"text": "Thinking it over."}]},
    {"role": "model", "parts": [{"functionCall": {"name": "exit_loop", "args": {}}}]},
    {"role": "model", "parts": [{"functionCall": {"name": "run_code", "args": {"code": "print(6 * 7 + 1)"}}}]},
    {"role": "model", "parts": [{"text": "Running it."}]},
    {"role": "model", "parts": [{"functionCall": {"name": "exit_loop", "args": {}}}]},
)
BROKEN_AGENT = "from tests.user_agents.digest_rlm.broken import {factory}\n\napp = {factory}()\n"


@contextmanager
def scripted_model(answers: tuple[dict[str, Any], ...] = ANSWERS) -> Iterator[None]:
    """Every BaseLlm/Gemini call answers with the next of ``answers`` (no network)."""
    from unittest import mock

    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.google_llm import Gemini
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    pending = [types.Content.model_validate(a) for a in answers]

    async def answer(self: Any, request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=pending.pop(0))

    with mock.patch.object(BaseLlm, "generate_content_async", answer), \
            mock.patch.object(Gemini, "generate_content_async", answer):
        yield


def agent_folder(parent: Path, name: str = "digest_rlm", broken: str | None = None) -> Path:
    """A copy of digest_rlm as an `adk test` agent folder under ``parent`` (``broken``: a factory of broken.py)."""
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    if broken is None:
        shutil.copy(DIGEST_DIR / "agent.py", folder / "agent.py")
    else:
        (folder / "agent.py").write_text(BROKEN_AGENT.format(factory=broken), encoding="utf-8")
    return folder


def rebuilt_fixture(folder: Path, name: str = "digest_twice") -> Path:
    """The fixture ADK's own ``rebuild_tests`` writes for ``folder``'s agent, from a seed holding the user turns."""
    from google.adk.cli.agent_test_runner import rebuild_tests

    fixture = folder / "tests" / f"{name}.json"
    fixture.parent.mkdir(exist_ok=True)
    seed = [{"author": "user", "content": {"role": "user", "parts": [{"text": m}]}} for m in MESSAGES]
    fixture.write_text(json.dumps({"appName": folder.name, "userId": "test_user", "state": {}, "events": seed}),
                       encoding="utf-8")
    with scripted_model():
        rebuild_tests(str(folder))
    return fixture


def run_adk_test(folder: Path) -> subprocess.CompletedProcess[str]:
    """What `adk test FOLDER` runs: pytest over ADK's agent_test_runner with ADK_TEST_FOLDER, in a subprocess."""
    from google.adk.cli import agent_test_runner

    env = {**os.environ, "ADK_TEST_FOLDER": str(folder), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--rootdir", str(folder), agent_test_runner.__file__], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        made = rebuilt_fixture(agent_folder(Path(tmp)))
        FIXTURE.parent.mkdir(exist_ok=True)
        shutil.copy(made, FIXTURE)
    print(f"wrote {FIXTURE}")
