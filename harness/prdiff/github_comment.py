"""Post the diff on its pull request as ONE comment, updated on every later run: ``python -m
harness.prdiff.github_comment COMMENT.md`` (what the repository's ``action.yml`` runs).

Only the standard library (urllib) and GitHub's documented REST endpoints for issue comments (a pull request is an
issue to them): ``GET /repos/{owner}/{repo}/issues/{issue_number}/comments`` (every page) finds the comment this
script wrote before by the hidden ``MARKER`` it starts with; ``PATCH /repos/{owner}/{repo}/issues/comments/{id}``
updates it, or ``POST /repos/{owner}/{repo}/issues/{issue_number}/comments`` writes the first one.

Read from the environment GitHub Actions sets: ``GITHUB_API_URL`` (GitHub Enterprise's too), ``GITHUB_REPOSITORY``
(owner/name), ``GITHUB_EVENT_PATH`` (the event's JSON: the pull request's number) and the token (``GITHUB_TOKEN``,
or the variable ``--token-env`` names). Exit 0 when posted, 1 when GitHub refused, 2 when a setting is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HarnessError

MARKER = "<!-- rlm-conformance -->"
COMMENT_LIMIT = 65_536
PER_PAGE = 100
API_VERSION = "2022-11-28"
TIMEOUT_S = 30


class CommentError(HarnessError):
    """A setting the comment needs is missing, or GitHub refused a request."""


@dataclass(frozen=True)
class Place:
    api: str  # https://api.github.com, without a trailing slash
    repository: str  # owner/name
    issue: int  # the pull request's number
    token: str


def place_from(env: Mapping[str, str], *, issue: int | None = None, token_env: str = "GITHUB_TOKEN") -> Place:
    """Where to comment, from GitHub Actions' variables; a missing one is a ``CommentError`` naming it."""
    repository = env.get("GITHUB_REPOSITORY", "")
    if repository.count("/") != 1:
        raise CommentError(f"GITHUB_REPOSITORY is {repository!r}, not owner/name. Fix: run inside GitHub Actions, or "
                           f"set it (e.g. GITHUB_REPOSITORY=octo/app).")
    token = env.get(token_env, "")
    if not token:
        raise CommentError(f"{token_env} is not set. Fix: pass the action's github-token input (the job's "
                           f"secrets.GITHUB_TOKEN, with permissions: pull-requests: write).")
    return Place(env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"), repository,
                 issue if issue is not None else issue_from_event(env.get("GITHUB_EVENT_PATH", "")), token)


def issue_from_event(path: str) -> int:
    """The pull request's (or issue's) number in the event payload GitHub wrote to ``GITHUB_EVENT_PATH``."""
    fix = "Fix: run on a pull_request event, or pass --issue NUMBER."
    if not path:
        raise CommentError(f"GITHUB_EVENT_PATH is not set. {fix}")
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommentError(f"{path}: cannot read the event payload ({exc}). {fix}") from None
    for holder in ("pull_request", "issue"):
        number = (event.get(holder) or {}).get("number") if isinstance(event, dict) else None
        if isinstance(number, int):
            return number
    if isinstance(event, dict) and isinstance(event.get("number"), int):
        return event["number"]
    raise CommentError(f"{path}: the event has no pull_request.number (not a pull-request event). {fix}")


def _call(place: Place, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        place.api + path, method=method, data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={"Accept": "application/vnd.github+json", "Authorization": f"Bearer {place.token}",
                 "X-GitHub-Api-Version": API_VERSION, "Content-Type": "application/json",
                 "User-Agent": "rlm-conformance"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        said = exc.read().decode("utf-8", "replace")[:300]
        hint = (" Fix: give the job `permissions: pull-requests: write` (a pull request from a fork gets a "
                "read-only token: comment from a pull_request_target or workflow_run job)."
                if exc.code in (401, 403, 404) else "")
        raise CommentError(f"{method} {place.api}{path}: GitHub answered {exc.code} {exc.reason}: {said}.{hint}") \
            from None
    except (urllib.error.URLError, OSError) as exc:
        raise CommentError(f"{method} {place.api}{path}: {exc}. Fix: check GITHUB_API_URL.") from None


def find_comment(place: Place, marker: str = MARKER) -> int | None:
    """The id of the first comment on the pull request whose body starts with ``marker``, every page read."""
    page = 1
    while True:
        comments = _call(place, "GET", f"/repos/{place.repository}/issues/{place.issue}/comments"
                                       f"?per_page={PER_PAGE}&page={page}")
        for comment in comments or []:
            if str(comment.get("body") or "").lstrip().startswith(marker):
                return int(comment["id"])
        if len(comments or []) < PER_PAGE:
            return None
        page += 1


def comment_body(markdown: str, marker: str = MARKER) -> str:
    body = f"{marker}\n{markdown}"
    if len(body) > COMMENT_LIMIT:  # `diff` keeps under 60,000 characters; a hand-made file may not
        body = body[:COMMENT_LIMIT - 60] + "\n\n*… cut to GitHub's comment limit.*\n"
    return body


def post_or_update(place: Place, markdown: str, *, marker: str = MARKER) -> tuple[str, dict[str, Any]]:
    """Update this script's comment on the pull request, or write it: ("updated" | "created", GitHub's answer)."""
    body = {"body": comment_body(markdown, marker)}
    existing = find_comment(place, marker)
    if existing is not None:
        return "updated", _call(place, "PATCH", f"/repos/{place.repository}/issues/comments/{existing}", body)
    return "created", _call(place, "POST", f"/repos/{place.repository}/issues/{place.issue}/comments", body)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.prdiff.github_comment",
                                     description="Post the diff's Markdown as the pull request's one "
                                                 "rlm-conformance comment (updated on every later run).")
    parser.add_argument("markdown", type=Path, metavar="COMMENT.md", help="what `rlm-conformance diff --markdown` wrote")
    parser.add_argument("--issue", type=int, metavar="NUMBER", help="the pull request (default: the event's)")
    parser.add_argument("--marker", default=MARKER, help="the hidden first line that marks the comment as this "
                                                         "script's (default: %(default)s)")
    parser.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                        help="the variable holding the token (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        place = place_from(os.environ if env is None else env, issue=args.issue, token_env=args.token_env)
        try:
            markdown = args.markdown.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommentError(f"{args.markdown}: cannot read the comment ({exc.strerror or exc}). Fix: pass the "
                               f"file `rlm-conformance diff --markdown FILE` wrote.") from None
    except CommentError as exc:
        print(f"github_comment: error: {exc}", file=sys.stderr)
        return 2
    try:
        done, answer = post_or_update(place, markdown, marker=args.marker)
    except CommentError as exc:
        print(f"github_comment: error: {exc}", file=sys.stderr)
        return 1
    print(f"{done} {answer.get('html_url') or answer.get('url') or 'the comment'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
