"""The comment script against a local stub of GitHub's issue-comment endpoints: one comment, found again by its
hidden marker (on any page) and updated; missing settings exit 2 naming the variable; a refusal exits 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.prdiff.github_comment import MARKER, main
from tests.prdiff.github_stub import TOKEN, github_stub


def _env(tmp_path: Path, api: str, number: int = 7) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": number}}), encoding="utf-8")
    return {"GITHUB_API_URL": api, "GITHUB_REPOSITORY": "octo/app", "GITHUB_EVENT_PATH": str(event),
            "GITHUB_TOKEN": TOKEN}


def _comment(tmp_path: Path, text: str) -> str:
    path = tmp_path / "comment.md"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_posts_once_then_updates_the_same_comment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with github_stub() as stub:
        for i in range(150):  # other people's comments: the script's own lands on page 2 of the list
            stub.add(7, f"comment {i} mentions rlm-conformance {MARKER}")
        env = _env(tmp_path, stub.url)
        assert main([_comment(tmp_path, "## first run\n")], env) == 0
        assert capsys.readouterr().out.startswith(f"created {stub.url}/pr/7#c")
        assert main([_comment(tmp_path, "## second run\n")], env) == 0
        assert capsys.readouterr().out.startswith(f"updated {stub.url}/pr/7#c")
    ours = [c for c in stub.comments[7] if c["body"].startswith(MARKER)]
    assert len(stub.comments[7]) == 151 and len(ours) == 1
    assert ours[0]["body"] == f"{MARKER}\n## second run\n"
    assert [m for m, _ in stub.calls] == ["GET", "GET", "POST", "GET", "GET", "PATCH"]
    assert stub.calls[-1][1] == f"/repos/octo/app/issues/comments/{ours[0]['id']}"


def test_missing_settings_exit_2_naming_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = _env(tmp_path, "http://127.0.0.1:9")
    comment = _comment(tmp_path, "x")
    for drop, says in [("GITHUB_TOKEN", "GITHUB_TOKEN is not set. Fix: pass the action's github-token input"),
                       ("GITHUB_REPOSITORY", "GITHUB_REPOSITORY is '', not owner/name"),
                       ("GITHUB_EVENT_PATH", "GITHUB_EVENT_PATH is not set. Fix: run on a pull_request event")]:
        assert main([comment], {k: v for k, v in env.items() if k != drop}) == 2
        assert says in capsys.readouterr().err
    (tmp_path / "event.json").write_text(json.dumps({"ref": "refs/heads/main"}), encoding="utf-8")
    assert main([comment], env) == 2
    assert "the event has no pull_request.number" in capsys.readouterr().err


def test_a_refusal_exits_1_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with github_stub() as stub:
        stub.refuse = 403
        assert main([_comment(tmp_path, "x"), "--issue", "9"], _env(tmp_path, stub.url)) == 1
    err = capsys.readouterr().err
    assert "GET " in err and "/repos/octo/app/issues/9/comments" in err and "403" in err
    assert "permissions: pull-requests: write" in err
