"""Job_B's writes on ``/Volumes`` use what the FUSE mount supports, and the fake refuses what it does not.

Databricks documents no direct appends and no non-sequential (random) writes on volumes, and no rename; the
fake's Job_B processes get an audit hook (``harness/databricks_fake/volume_mount_site``) that refuses them under
its stand-in folder, and the executor's ``write_atomic`` writes a file whole under its final name there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.databricks_fake.volume_mount import mount_environment
from reference_agent.executor import files as agent_files

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import json, os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from harness import files as harness_files
from reference_agent.executor import files as agent_files

mount = Path(sys.argv[1])
existing = mount / "existing.txt"
outcomes = {}

def attempt(name, action):
    try:
        action()
        outcomes[name] = "ok"
    except OSError as exc:
        outcomes[name] = f"{exc.errno}: {exc.strerror}"

attempt("write_whole", lambda: existing.write_bytes(b"first"))
attempt("overwrite_whole", lambda: existing.write_bytes(b"second"))
attempt("read", lambda: existing.read_bytes())
attempt("append", lambda: open(existing, "ab").write(b"more"))
attempt("update_in_place", lambda: open(existing, "r+b").write(b"X"))
attempt("rename", lambda: os.rename(existing, mount / "renamed.txt"))
attempt("replace_into", lambda: os.replace(Path(sys.argv[3]) / "local.txt", mount / "moved.txt"))
attempt("executor_write_atomic", lambda: agent_files.write_atomic(mount / "deep" / "result.json", b"{}"))
attempt("temp_then_rename", lambda: harness_files.write_atomic(mount / "deep" / "old_way.json", b"{}"))
attempt("outside_append", lambda: open(Path(sys.argv[3]) / "local.txt", "ab").write(b"x"))
attempt("delete", lambda: existing.unlink())
print(json.dumps(outcomes))
"""


def _probe(tmp_path: Path) -> dict[str, str]:
    mount, local = tmp_path / "volumes", tmp_path / "local"
    mount.mkdir()
    local.mkdir()
    (local / "local.txt").write_bytes(b"local")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RLM_VOLUMES_MOUNT")}
    env.update(mount_environment(mount, env))
    done = subprocess.run([sys.executable, "-c", _PROBE, str(mount), str(ROOT), str(local)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_fake_mount_refuses_appends_in_place_updates_and_renames_as_the_volume_does(tmp_path: Path) -> None:
    outcomes = _probe(tmp_path)
    assert outcomes["write_whole"] == outcomes["overwrite_whole"] == outcomes["read"] == "ok"
    assert outcomes["append"].startswith("95:") and "direct append" in outcomes["append"]
    assert outcomes["update_in_place"].startswith("95:") and "non-sequential" in outcomes["update_in_place"]
    assert outcomes["rename"].startswith("38:") and outcomes["replace_into"].startswith("38:")
    assert "write the whole file" in outcomes["rename"]
    # The old temp-file-then-rename fails on the mount; the executor's write_atomic writes the file whole.
    assert outcomes["temp_then_rename"].startswith("38:")
    assert outcomes["executor_write_atomic"] == "ok"
    assert outcomes["outside_append"] == outcomes["delete"] == "ok"


def test_on_the_mount_write_atomic_writes_once_under_the_final_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(agent_files.VOLUMES_MOUNT_VARIABLE, str(tmp_path / "vol"))
    target = tmp_path / "vol" / "a" / "result.json"
    monkeypatch.setattr(os, "replace", lambda *a: pytest.fail("no rename on a volume"))
    agent_files.write_atomic(target, b'{"status": "ok"}', mode=0o644, durable=True)
    assert target.read_bytes() == b'{"status": "ok"}'
    assert [p.name for p in target.parent.iterdir()] == ["result.json"]


def test_on_the_mount_a_failed_write_leaves_no_half_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(agent_files.VOLUMES_MOUNT_VARIABLE, str(tmp_path / "vol"))
    target = tmp_path / "vol" / "result.json"

    real_open = open

    def failing_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if "w" in mode:
            handle.write(b'{"half": ')
            handle.close()
            raise OSError(5, "Input/output error")
        return handle

    monkeypatch.setattr("builtins.open", failing_open)
    with pytest.raises(OSError, match="Input/output"):
        agent_files.write_atomic(target, b'{"half": 1}')
    assert not target.exists()


def test_the_fake_and_the_executor_name_the_same_variable() -> None:
    from harness.databricks_fake import volume_mount

    site = (volume_mount.SITE / "sitecustomize.py").read_text(encoding="utf-8")
    assert volume_mount.VOLUMES_MOUNT_VARIABLE == agent_files.VOLUMES_MOUNT_VARIABLE
    assert f'_VARIABLE = "{agent_files.VOLUMES_MOUNT_VARIABLE}"' in site


def test_only_paths_on_a_mount_count(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(agent_files.VOLUMES_MOUNT_VARIABLE, raising=False)
    assert agent_files.on_volume_mount(Path("/Volumes/main/rlm/vol/x.json"))
    assert not agent_files.on_volume_mount(Path("/VolumesX/x.json"))
    assert not agent_files.on_volume_mount(tmp_path / "x.json")
    monkeypatch.setenv(agent_files.VOLUMES_MOUNT_VARIABLE, os.pathsep.join(["", str(tmp_path / "m")]))
    assert agent_files.on_volume_mount(tmp_path / "m" / "x.json")
    assert not agent_files.on_volume_mount(tmp_path / "mx" / "x.json")


def test_a_declared_mount_counts_without_the_variable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(agent_files.VOLUMES_MOUNT_VARIABLE, raising=False)
    monkeypatch.setattr(agent_files, "_declared_mounts", [])
    assert not agent_files.on_volume_mount(tmp_path / "m" / "x.json")
    agent_files.declare_volume_mounts(os.pathsep.join([str(tmp_path / "m"), ""]))
    assert agent_files.on_volume_mount(tmp_path / "m" / "x.json") and agent_files.volume_mounts() == [str(tmp_path / "m")]


async def test_job_bs_child_keeps_the_mounts_limits_without_the_variable(runner) -> None:
    # The child's environment is an allow-list (no RLM_VOLUMES_MOUNT): the mount's limits reach it through the
    # site copy on PYTHONPATH, and its own writes (result JSON, snapshot) still go the way the mount allows.
    import json as json_module

    from reference_agent.backends.jobs import JobRequest

    artifact = runner.volume.path("artifacts", "agent_code_s1_iter1.py")
    runner.volume.write_text(artifact, "import os, sys\nprint(os.environ.get('RLM_VOLUMES_MOUNT'))\n"
                                       "here = os.path.dirname(sys.argv[sys.argv.index('--artifact-path') + 1])\n"
                                       "open(os.path.join(here, 'log.txt'), 'ab')\n")
    outcome = await runner.run(JobRequest(artifact_path=artifact, run_id="s1", iteration=1, timeout_s=20.0),
                               sub_lm=None)  # type: ignore[arg-type]
    result = json_module.loads(runner.volume.read_text(outcome.result_json_path))
    assert result["stdout"] == "None\n"
    assert result["error"]["type"] == "OSError" and "direct append is not supported" in result["error"]["message"]
