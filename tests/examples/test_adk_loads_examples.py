"""`adk web examples` / `adk run examples/<name>` load each example cleanly (checked in a fresh process:
ADK's loader puts examples/ on sys.path and imports the folders as top-level packages)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

LOAD = """
import json, logging, warnings
warnings.simplefilter("ignore", DeprecationWarning)
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger().addHandler(Keep(level=logging.WARNING))
from google.adk.apps import App
from google.adk.cli.utils.agent_loader import AgentLoader
loader = AgentLoader("examples")
names = loader.list_agents()
apps = {name: loader.load_agent(name) for name in names}
print(json.dumps({"names": names, "apps": {n: a.name for n, a in apps.items() if isinstance(a, App)},
                  "warnings": records}))
"""


def test_adk_loader_finds_both_apps_without_warnings() -> None:
    done = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["names"] == ["seed004_rlm", "seed004_rlm_broken"]
    assert seen["apps"] == {"seed004_rlm": "seed004_rlm", "seed004_rlm_broken": "seed004_rlm_broken"}
    assert seen["warnings"] == []
