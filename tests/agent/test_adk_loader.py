"""``adk run reference_agent`` / ``adk web .`` load the reference agent without a warning.

A fresh process does what ADK's CLI does from the repo root (``google.adk.cli.cli.run_cli`` and the web
server): ``load_services_module`` on the agent folder (ADK's hook for an agent's ``services.py``), then
``AgentLoader(agents_dir=<root>).load_agent("reference_agent")``, then a ``Runner`` on the App (where ADK
compares the App's name with the folder's). Every log record at WARNING or above fails the test: ADK
warned "Failed to load services.py" while the agent had a module of that name, and "App name mismatch"
while the App was called ``rlm_reference``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
AGENT = "reference_agent"

PROBE = r"""
import json, logging, sys
root, name = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
records = []

class Keep(logging.Handler):
    def emit(self, record):
        records.append(f"{record.levelname} {record.name}: {record.getMessage()}")

logging.getLogger().addHandler(Keep(level=logging.WARNING))
from google.adk.apps import App
from google.adk.cli.service_registry import load_services_module
from google.adk.cli.utils.agent_loader import AgentLoader
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService

load_services_module(f"{root}/{name}")
loader = AgentLoader(agents_dir=root)
loaded = loader.load_agent(name)
Runner(app=loaded, session_service=InMemorySessionService())
print(json.dumps({"type": type(loaded).__name__, "app_name": getattr(loaded, "name", None),
                  "root_agent": getattr(getattr(loaded, "root_agent", None), "name", None),
                  "origin": getattr(loaded, "_adk_origin_app_name", None),
                  "listed": name in loader.list_agents(), "file": sys.modules[name].__file__,
                  "warnings": records}))
"""


def load_with_adk(root: Path, tmp_path: Path, **env: str) -> dict:
    environment = {**os.environ, "RLM_HOME": str(tmp_path / "home"), "GOOGLE_API_KEY": "dummy-key-for-loading",
                   "ADK_DISABLE_LOAD_DOTENV": "1", **env}
    if "RLM_APP_NAME" not in env:
        environment.pop("RLM_APP_NAME", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(root), AGENT], cwd=root, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_adk_loads_the_app_from_the_repo_root_without_a_warning(tmp_path: Path) -> None:
    loaded = load_with_adk(ROOT, tmp_path)
    assert loaded["type"] == "App" and loaded["listed"]
    assert loaded["app_name"] == AGENT == loaded["origin"], "the App must be named after its folder"
    assert loaded["root_agent"] == "orchestrator_loop"
    assert Path(loaded["file"]).parent == ROOT / AGENT
    assert loaded["warnings"] == []


def test_adk_conventional_names_are_not_modules_of_the_agent() -> None:
    """ADK's CLI imports an agent folder's services.py (and reads services.yaml/.yml) as its own hook."""
    assert not [name for name in ("services.py", "services.yaml", "services.yml") if (ROOT / AGENT / name).exists()]


@pytest.fixture
def agent_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / AGENT, root / AGENT, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_probe_sees_a_services_module(agent_copy: Path, tmp_path: Path) -> None:
    (agent_copy / AGENT / "services.py").write_text("from .wiring import RuntimeServices\n", encoding="utf-8")
    loaded = load_with_adk(agent_copy, tmp_path)
    assert Path(loaded["file"]).parent == agent_copy / AGENT
    assert any("Failed to load services.py" in w for w in loaded["warnings"]), loaded["warnings"]


def test_the_probe_sees_names_that_diverge(agent_copy: Path, tmp_path: Path) -> None:
    warnings = load_with_adk(agent_copy, tmp_path, RLM_APP_NAME="rlm_reference")["warnings"]
    assert any("App name mismatch" in w for w in warnings), warnings
