"""requires-python says what the code needs: vermin reads every module and finds the oldest Python it runs on.

A module that starts using a newer feature (a stdlib module, a syntax, a member such as datetime.UTC) raises
that minimum; this test then fails until pyproject.toml says so — and the other way round, a requires-python
stricter than the code needs fails too, so the range stays as wide as the code supports.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
# Left out of `tox -e fast` (vermin reads the whole tree): tox.ini.
pytestmark = [pytest.mark.line_independent, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "reference_agent", "adk_compat")


def _requires_python() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    match = re.fullmatch(r">=\s*3\.(\d+)", spec.strip())
    assert match, f"requires-python {spec!r}: expected '>=3.N' (no upper bound: the code has no reason for one)"
    return 3, int(match.group(1))


def _minimum(paths: list[Path]) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", "import sys; from vermin.main import main; sys.exit(main())", "--no-tips", "--eval-annotations", "--backport",
                           "typing_extensions", "-t=3.0-", *map(str, paths)], capture_output=True, text=True,
                          timeout=300)
    found = re.search(r"Minimum required versions: ([\d.]+)", done.stdout)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    major, minor = found.group(1).split(".")[:2]
    return int(major), int(minor)


def test_requires_python_is_the_oldest_python_the_code_runs_on() -> None:
    pytest.importorskip("vermin")
    paths = [ROOT / p for p in PACKAGES if (ROOT / p).exists()]
    assert _minimum(paths) == _requires_python()


def test_the_check_sees_a_newer_feature(tmp_path: Path) -> None:
    pytest.importorskip("vermin")
    module = tmp_path / "uses_tomllib.py"
    module.write_text("import tomllib\n", encoding="utf-8")
    assert _minimum([module]) == (3, 11)


# Job_B's payload runs on Databricks compute, not where the project is installed: Python 3.10 (DBR 13/14 LTS and
# serverless environment 1) to 3.12. reference_agent/backends/databricks/payload.py ships these files.
PAYLOAD_OLDEST = (3, 10)


def _payload_paths() -> list[Path]:
    from reference_agent.backends.databricks.payload import LEFT_OUT, SOURCE

    return [p for p in sorted(SOURCE.glob("*.py")) if p.name not in LEFT_OUT]


def test_job_b_payload_runs_on_python_3_10() -> None:
    pytest.importorskip("vermin")
    assert _minimum(_payload_paths()) <= PAYLOAD_OLDEST, "Job_B's payload (reference_agent/executor) must run on 3.10"


def test_the_payload_check_sees_a_3_11_feature(tmp_path: Path) -> None:
    pytest.importorskip("vermin")
    module = tmp_path / "newer.py"
    module.write_text("import tomllib\n", encoding="utf-8")
    assert _minimum([*_payload_paths(), module]) > PAYLOAD_OLDEST
