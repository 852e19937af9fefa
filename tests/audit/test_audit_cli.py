"""``rlm-conformance audit STORE`` on stores written by ADK's own DatabaseSessionService and by ours: clean
stores pass, each violation injected straight into the tables fails naming the session and the key, and
nothing else is flagged."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest

from harness.cli import main
from tests.audit.tamper import TARGET, VIOLATIONS, Layout
from tests.audit.writers import adk_sqlite_store, rlm_duckdb_store

SESSIONS = 3


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("stores")
    asyncio.run(adk_sqlite_store(folder / "adk.db", SESSIONS))
    asyncio.run(rlm_duckdb_store(folder / "rlm.duckdb", SESSIONS))
    return {"adk": folder / "adk.db", "rlm": folder / "rlm.duckdb"}


def copy_of(written: dict[str, Path], layout: str, tmp_path: Path) -> Path:
    target = tmp_path / written[layout].name
    shutil.copy(written[layout], target)
    return target


def spelling(layout: str, path: Path) -> str:
    return f"sqlite:///{path}" if layout == "adk" else str(path)


def connect(layout: str, path: Path):
    return sqlite3.connect(path) if layout == "adk" else duckdb.connect(str(path))


def audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["audit", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def failures(report: dict) -> dict[str, set[str]]:
    return {r["scenario"]: {c["name"] for c in r["checks"] if c["status"] == "fail"} for r in report["results"]
            if any(c["status"] == "fail" for c in r["checks"])}


@pytest.mark.parametrize("layout", ["adk", "rlm"])
def test_a_clean_store_passes(layout: str, written: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, report = audit(capsys, spelling(layout, written[layout]), "--profile", "reference")
    assert code == 0, failures(report)
    assert len(report["results"]) == SESSIONS and report["subject"] == "session"
    assert report["extra"]["layout"].startswith(layout)
    statuses = {c["name"]: c["status"] for c in report["results"][0]["checks"]}
    # The checks that matter for the issue ran (not n/a) on the clean store.
    for name in ("no_temp_persisted", "summary_persisted", "state_matches_events", "events_ordered"):
        assert statuses[name] == "pass", (name, report["results"][0]["checks"])


CASES = [(name, layout) for name, (_, expected) in VIOLATIONS.items() for layout in expected]


@pytest.mark.parametrize(("violation", "layout"), CASES, ids=[f"{v}-{lay}" for v, lay in CASES])
def test_each_injected_violation_fails_naming_session_and_key(violation: str, layout: str, written: dict[str, Path],
                                                              tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    tamper, expected = VIOLATIONS[violation]
    path = copy_of(written, layout, tmp_path)
    db = connect(layout, path)
    try:
        named = tamper(Layout(layout), db)
        db.commit()
    finally:
        db.close()
    code, report = audit(capsys, spelling(layout, path), "--profile", "reference")
    session = "/".join(TARGET)
    assert code == 1
    assert failures(report) == {session: expected[layout]}, failures(report)
    evidence = [line for r in report["results"] for c in r["checks"] if c["status"] == "fail" for line in c["evidence"]]
    assert any(session in line and named in line for line in evidence), evidence


def test_fail_on_chooses_the_gating_checks(written: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_of(written, "rlm", tmp_path)
    db = connect("rlm", path)
    VIOLATIONS["temp_in_state"][0](Layout("rlm"), db)
    db.commit()
    db.close()
    store = spelling("rlm", path)
    assert audit(capsys, store, "--profile", "reference", "--fail-on", "state_budget,events_ordered")[0] == 0
    assert audit(capsys, store, "--profile", "reference", "--fail-on", "no_temp_persisted")[0] == 1
    assert main(["audit", store, "--fail-on", "no_such_check"]) == 2
    assert "no_such_check" in capsys.readouterr().err


def test_reports_are_written_in_every_format(written: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    reports = tmp_path / "reports"
    assert main(["audit", str(written["rlm"]), "--profile", "reference", "--reports", str(reports)]) == 0
    out = capsys.readouterr().out
    assert "3 sessions, 10 checks" in out and "rlm_app/user-1/s-00001" in out
    names = sorted(p.name for p in reports.iterdir())
    assert names == ["conformance.html", "conformance.json", "conformance.md", "conformance.xml"]
    markdown = (reports / "conformance.md").read_text()
    assert "| session | result |" in markdown and "3 sessions" in markdown
    assert "rlm_app/user-1/s-00001::no_temp_persisted" in (reports / "conformance.xml").read_text()
    assert "<h2>Sessions</h2>" in (reports / "conformance.html").read_text()


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(tmp_path / "absent.duckdb")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["audit", "sqlite:///" + str(tmp_path / "absent.db")]) == 2
    assert "no such SQLite file" in capsys.readouterr().err
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as db:
        db.execute("CREATE TABLE sessions (k VARCHAR, v VARCHAR)")
    assert main(["audit", str(other)]) == 2
    err = capsys.readouterr().err
    assert "no session-store layout" in err and "sessions(k, v)" in err
    assert "adk (" in err and "rlm (" in err and "seed (" in err and "events.event_data" in err
    assert main(["audit", str(other), "--profile", str(tmp_path / "none.yaml")]) == 2
    assert main(["audit", str(other), "--since", "yesterday"]) == 2
    assert "--since 'yesterday'" in capsys.readouterr().err


def test_a_session_whose_row_cannot_be_read_is_an_error_row_and_the_others_are_judged(
        written: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_of(written, "rlm", tmp_path)
    with duckdb.connect(str(path)) as db:
        db.execute("UPDATE sessions SET state_json = '{not json' WHERE id = 's-00001'")
    code, report = audit(capsys, str(path), "--profile", "reference")
    assert code == 1
    rows = {r["scenario"]: r for r in report["results"]}
    broken = rows["rlm_app/user-1/s-00001"]
    assert broken["status"] == "error" and "state_json: not valid JSON" in broken["error"]
    assert [r["status"] for name, r in rows.items() if name != "rlm_app/user-1/s-00001"] == ["pass", "pass"]


@pytest.mark.slow
def test_the_store_a_reference_scenario_run_leaves_audits_clean(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A real run (scripted model) of the reference agent; the reader agrees with the service's own read-back."""
    from harness.audit.stores import SessionFilter, open_store
    from tests.audit.reference_store import read_store, run_reference

    store = run_reference("app_snippets_shared", tmp_path)
    expected = {s.key: s for s in read_store(store) if not s.app_name.startswith("contract-")}
    (app,) = {s.app_name for s in expected.values()}
    with open_store(str(store)) as opened:
        read = {s.key: s for s in opened.sessions(SessionFilter(app=app))}
    assert read.keys() == expected.keys()
    for key, stored in read.items():
        theirs = expected[key]
        assert (stored.state, stored.app_state, stored.user_state, stored.version) == \
            (theirs.state, theirs.app_state, theirs.user_state, theirs.version)
        assert [(e.seq, e.author, e.state_delta, e.function_calls, e.function_responses) for e in stored.events] == \
            [(e.seq, e.author, e.state_delta, e.function_calls, e.function_responses) for e in theirs.events]
    code, report = audit(capsys, str(store), "--app", app, "--profile", "reference")
    assert code == 0, failures(report)
    assert len(report["results"]) == len(expected)
