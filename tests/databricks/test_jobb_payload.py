"""Job_B's payload wheel and entry: built deterministically, installable, and run the way Databricks runs a
``spark_python_task`` (the file's source exec'd in a running interpreter, no ``__file__``, stdlib + the wheel)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reference_agent.backends.databricks.config import DatabricksSettings
from reference_agent.backends.databricks.jobs import ENTRY_SOURCE
from reference_agent.backends.databricks.payload import (
    PACKAGE,
    SOURCE,
    build_payload_wheel,
    payload_files,
    payload_source,
)

# What the fake (and this test) runs: the file's source exec'd with sys.argv = [file, *parameters], no __file__.
EXEC_IN_RUNNING_INTERPRETER = (
    "import sys\n"
    "path = sys.argv[1]\n"
    "sys.argv = [path, *sys.argv[2:]]\n"
    "source = open(path, encoding='utf-8').read()\n"
    "try:\n"
    "    exec(compile(source, path, 'exec'), {'__name__': '__main__', '__builtins__': __builtins__})\n"
    "except SystemExit as exc:\n"
    "    print('SystemExit', exc.code)\n"
    "print('the interpreter that ran the entry is still alive')\n"
)
OTHER_PYTHONS = {"3.10": "/root/.pyenv/versions/3.10.13/bin/python3.10",
                 "3.12": "/root/.pyenv/versions/3.12.1/bin/python3.12"}


def unpacked_payload(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    with zipfile.ZipFile(io.BytesIO(build_payload_wheel().data)) as archive:
        archive.extractall(site)
    return site


def run_entry(python: str, site: Path | None, tmp_path: Path, code: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The entry exec'd by ``python -S`` (stdlib only) with the payload (or nothing) on the path."""
    artifact = tmp_path / "vol" / "artifacts" / "agent_code_s1_iter1.py"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    artifact.write_text(code, encoding="utf-8")
    entry = tmp_path / "jobb_entry.py"
    shutil.copy(ENTRY_SOURCE, entry)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site) if site else "", "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([python, "-S", "-c", EXEC_IN_RUNNING_INTERPRETER, str(entry), "--artifact-path",
                           str(artifact), "--run-id", "s1", "--iteration", "1", "--timeout", "10"],
                          capture_output=True, text=True, env=env, timeout=60)
    return done, artifact.parent / "result_s1_iter1.json"


def test_the_entry_runs_by_exec_without___file__(tmp_path: Path) -> None:
    done, result_path = run_entry(sys.executable, unpacked_payload(tmp_path), tmp_path,
                                  "import os\nprint('pid differs:', os.getpid() != int(os.environ.get('X', 0)))\n"
                                  "FINAL('ok')\n")
    assert done.returncode == 0, done.stderr
    # No os._exit in the interpreter that ran the entry: it goes on after the exec, and exits cleanly.
    assert done.stdout.splitlines()[-1] == "the interpreter that ran the entry is still alive"
    assert "SystemExit" not in done.stdout
    result = json.loads(result_path.read_text(encoding="utf-8"))
    assert (result["status"], result["final_answer"], result["written_by"]) == ("success", "ok", "executor")


def test_a_failed_block_ends_the_entry_with_a_nonzero_system_exit_only(tmp_path: Path) -> None:
    done, result_path = run_entry(sys.executable, unpacked_payload(tmp_path), tmp_path, "import os\nos._exit(3)\n")
    assert "SystemExit 1" in done.stdout  # fails the task, as the platform reads a nonzero SystemExit
    assert done.stdout.splitlines()[-1] == "the interpreter that ran the entry is still alive"
    result = json.loads(result_path.read_text(encoding="utf-8"))
    assert (result["status"], result["exit_code"], result["written_by"]) == ("exit", 3, "runner")


def test_without_the_payload_the_entry_names_the_missing_package(tmp_path: Path) -> None:
    done, result_path = run_entry(sys.executable, None, tmp_path, "print(1)\n")
    assert done.returncode == 1 and not result_path.exists()
    assert "ModuleNotFoundError: Job_B cannot start: the payload package rlm_jobb is not installed" in done.stderr
    assert "RLM_DATABRICKS_WHEEL" in done.stderr


def test_the_entry_never_reads_its_own_path() -> None:
    source = ENTRY_SOURCE.read_text(encoding="utf-8")
    code = compile(source, "jobb_entry.py", "exec")
    names = set(code.co_names) | {n for c in code.co_consts if hasattr(c, "co_names") for n in c.co_names}
    assert "__file__" not in names and "_exit" not in names


@pytest.mark.parametrize("version", sorted(OTHER_PYTHONS))
def test_the_payload_runs_on_other_pythons(tmp_path: Path, version: str) -> None:
    python = OTHER_PYTHONS[version]
    if not Path(python).exists():
        pytest.skip(f"no Python {version} at {python}")
    done, result_path = run_entry(python, unpacked_payload(tmp_path), tmp_path,
                                  "import sys\nx = sorted(context or [])\nFINAL(sys.version_info[:2])\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(result_path.read_text(encoding="utf-8"))["final_answer"] == f"({version.replace('.', ', ')})"


def test_the_wheel_is_deterministic_and_follows_pep_427() -> None:
    first = build_payload_wheel()
    build_payload_wheel.cache_clear()
    second = build_payload_wheel()
    assert first.data == second.data and first.digest == second.digest
    assert first.filename == f"{PACKAGE}-{first.version}-py3-none-any.whl"
    with zipfile.ZipFile(io.BytesIO(first.data)) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        dist_info = f"{PACKAGE}-{first.version}.dist-info"
        assert names[-1] == f"{dist_info}/RECORD" and names[:-3] == sorted(names[:-3])
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and i.external_attr >> 16 == 0o644 for i in infos)
        wheel = archive.read(f"{dist_info}/WHEEL").decode()
        assert "Root-Is-Purelib: true" in wheel and "Tag: py3-none-any" in wheel
        metadata = archive.read(f"{dist_info}/METADATA").decode()
        assert "Name: rlm-jobb" in metadata and "Requires-Python: >=3.10" in metadata and "Requires-Dist" not in metadata
        rows = list(csv.reader(io.StringIO(archive.read(f"{dist_info}/RECORD").decode())))
        assert sorted(r[0] for r in rows) == sorted(names)
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = archive.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={expected}", len(data))


def test_the_wheel_holds_the_executor_sources_unchanged() -> None:
    with zipfile.ZipFile(io.BytesIO(build_payload_wheel().data)) as archive:
        shipped = {n: archive.read(n) for n in archive.namelist() if n.startswith(f"{PACKAGE}/")}
    assert shipped == payload_files()
    assert shipped[f"{PACKAGE}/supervisor.py"] == (SOURCE / "supervisor.py").read_bytes()
    assert f"{PACKAGE}/worker.py" not in shipped  # the local warm worker is not Job_B on Databricks
    # One source under two names: nothing in it may import the package by its absolute name.
    for name, data in shipped.items():
        assert b"from reference_agent" not in data and b"import reference_agent" not in data, name


@pytest.mark.slow
def test_pip_installs_the_wheel(tmp_path: Path) -> None:
    wheel = build_payload_wheel()
    path = tmp_path / wheel.filename
    path.write_bytes(wheel.data)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                           "--disable-pip-version-check", "--target", str(tmp_path / "t"), str(path)],
                          capture_output=True, text=True, timeout=120)
    if "No module named pip" in done.stderr:
        pytest.skip("pip is not installed")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "t" / PACKAGE / "supervisor.py").is_file()


def test_a_changed_payload_gets_a_new_path() -> None:
    wheel = build_payload_wheel()
    other = build_payload_wheel("9.9.9")
    root = "/Volumes/main/rlm/vol/rlm"
    assert wheel.volume_path(root) == f"{root}/_rlm/wheels/{wheel.digest[:16]}/{wheel.filename}"
    assert other.digest != wheel.digest and other.volume_path(root) != wheel.volume_path(root)


def test_payload_source_says_where_the_payload_comes_from() -> None:
    settings = DatabricksSettings(host="https://x.cloud.databricks.com", token="t", catalog="main", schema="rlm",
                                  volume="vol")
    wheel = build_payload_wheel()
    assert payload_source(settings).startswith(f"/Volumes/main/rlm/vol/rlm/_rlm/wheels/{wheel.digest[:16]}/")
    assert "built from reference_agent/executor" in payload_source(settings)
    own = settings.with_overrides(wheel="/Volumes/main/rlm/vol/mine.whl")
    assert payload_source(own).startswith("/Volumes/main/rlm/vol/mine.whl (RLM_DATABRICKS_WHEEL")
    assert payload_source(DatabricksSettings()).startswith(f"<volume_root>/_rlm/wheels/{wheel.digest[:16]}/")
