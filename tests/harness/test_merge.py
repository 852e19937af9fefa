"""``rlm-conformance merge``: the reports of ``run --shard 1/3 .. 3/3`` joined equal the unsharded run's in verdicts,
order and JUnit counts; shards that do not make one run are refused with exit 2, naming the file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli.main import main

pytestmark = pytest.mark.slow  # eight scenario runs end to end (replay, offline)

ROOT = Path(__file__).resolve().parents[2]
CHEAP = ("exit_loop", "model_truncated_body", "final_answer", "final_var_answer")


def _run(out: Path, *extra: str) -> int:
    words = [w for name in CHEAP for w in ("--scenario", name)]
    return main(["run", *words, "--scenarios-dir", str(ROOT / "scenarios"), "--cassette-dir", str(ROOT / "cassettes"),
                 "--snapshot-dir", str(ROOT / "snapshots"), "-j", "1", "--no-progress", "--reports-dir", str(out),
                 *extra])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("merge")
    _run(base / "whole")
    for i in (1, 2, 3):
        _run(base / f"shard{i}", "--shard", f"{i}/3")
    return base


def _verdicts(path: Path) -> list[tuple[str, str, list[tuple[str, str]]]]:
    data = json.loads((path / "conformance.json").read_text(encoding="utf-8"))
    return [(r["scenario"], r["status"], [(c["name"], c["status"]) for c in r["checks"]]) for r in data["results"]]


def _junit_counts(path: Path) -> dict[str, str]:
    root = ET.parse(path / "conformance.xml").getroot()
    return {key: root.get(key, "") for key in ("tests", "failures", "errors", "skipped")}


def test_merged_shards_equal_the_unsharded_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shards = [_verdicts(runs / f"shard{i}") for i in (1, 2, 3)]
    assert all(shards) and sum(len(s) for s in shards) == len(CHEAP)  # each shard ran something, together all
    assert main(["merge", *(str(runs / f"shard{i}") for i in (3, 1, 2)), "--reports-dir", str(runs / "merged")]) == 0
    assert _verdicts(runs / "merged") == _verdicts(runs / "whole")
    assert _junit_counts(runs / "merged") == _junit_counts(runs / "whole")
    assert {p.name for p in (runs / "merged").iterdir()} == {"conformance.json", "conformance.xml", "conformance.md",
                                                              "conformance.html"}
    extra = json.loads((runs / "merged" / "conformance.json").read_text(encoding="utf-8"))["extra"]
    assert extra["shards"] == "1/3, 2/3, 3/3" and "shard_positions" not in extra


def _copy(runs: Path, shard: int, dest: Path, **changes: str) -> Path:
    data = json.loads((runs / f"shard{shard}" / "conformance.json").read_text(encoding="utf-8"))
    data["extra"].update(changes)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "conformance.json").write_text(json.dumps(data), encoding="utf-8")
    return dest


def _refused(capsys: pytest.CaptureFixture[str], *folders: Path) -> str:
    assert main(["merge", *map(str, folders), "--reports-dir", str(folders[0].parent / "out")]) == 2
    return capsys.readouterr().err


def test_a_missing_shard_is_named(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, runs / "shard1", runs / "shard3")
    assert "shard 2/3 missing" in err and "--shard 2/3" in err


def test_a_shard_passed_twice_overlaps(runs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    twin = _copy(runs, 2, tmp_path / "twin")
    err = _refused(capsys, runs / "shard1", runs / "shard2", twin, runs / "shard3")
    assert f"{twin / 'conformance.json'}: shard 2/3 overlaps" in err


def test_another_adk_line_or_target_is_refused(runs: Path, capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    ran = json.loads((runs / "shard3" / "conformance.json").read_text(encoding="utf-8"))["extra"]["adk"]
    other_line = "2.0.0" if ran.startswith("1.") else "1.39.1"  # tox runs this on both lines
    old_adk = _copy(runs, 3, tmp_path / "adk", adk=other_line)
    err = _refused(capsys, runs / "shard1", runs / "shard2", old_adk)
    assert f"{old_adk / 'conformance.json'}: ADK line '{other_line[0]}.x'" in err
    other = _copy(runs, 3, tmp_path / "other", target="my_pkg.agent:app")
    assert f"{other / 'conformance.json'}: target 'my_pkg.agent:app'" in _refused(capsys, runs / "shard1",
                                                                                   runs / "shard2", other)


def test_an_unsharded_report_is_not_a_shard(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, runs / "whole", runs / "shard1")
    assert f"{runs / 'whole' / 'conformance.json'}: not a shard's report" in err
