"""A re-recording whose Databricks SQL changed is a change (harness/recording/cassette_diff.py): the replay pairs
SQL calls by path and order alone, so other SQL would replay on recorded evidence that no longer describes the
agent. Only the statement text counts; parameters (ids, timestamps) do not."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.recording.cassette_diff import SQL_CALLER, compare_cassettes

CASSETTE = Path(__file__).resolve().parents[2] / "cassettes" / "databricks" / "single_delegation.yaml"


def _rewritten(tmp_path: Path, change) -> Path:
    data = yaml.safe_load(CASSETTE.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        request = interaction["request"]
        if request["uri"].endswith("/sql/statements"):
            body = json.loads(request["body"])
            change(body)
            request["body"] = json.dumps(body)
    out = tmp_path / "new.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


def test_other_sql_is_a_change_named_by_its_statement(tmp_path: Path) -> None:
    def other_table(body: dict) -> None:
        body["statement"] = body["statement"].replace("INTO events", "INTO events_v2")

    identity, changes = compare_cassettes(CASSETTE, _rewritten(tmp_path, other_table))
    assert not identity
    assert changes and {c.caller for c in changes} == {SQL_CALLER} and {c.kind for c in changes} == {"request"}
    assert "events_v2" in changes[0].new and "events_v2" not in changes[0].old


def test_new_parameters_alone_are_no_change(tmp_path: Path) -> None:
    def new_parameters(body: dict) -> None:
        for parameter in body.get("parameters") or []:
            parameter["value"] = "another id or time"

    assert compare_cassettes(CASSETTE, _rewritten(tmp_path, new_parameters)) == ([], [])
