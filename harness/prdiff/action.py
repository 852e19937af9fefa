"""The GitHub Action's steps (``action.yml`` at the repository's root runs ``python -m harness.prdiff.action``): run
the suite on the pull request's head and on its base, diff the two runs, post or update the one comment.

Kept here, not in the YAML, so it is tested end to end (tests/prdiff/test_action_end_to_end.py): the inputs come as
``INPUT_*`` variables (action.yml hands each one over), GitHub's own variables say where things are
(``GITHUB_WORKSPACE``, ``RUNNER_TEMP``, ``GITHUB_EVENT_PATH``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``).

* HEAD: ``rlm-conformance run`` in the workspace (after ``INPUT_INSTALL``, if given, e.g. ``pip install -e .``).
* BASE: ``INPUT_BASE_REPORT`` (a stored reports folder or conformance.json), else the same run in a ``git worktree``
  of the base commit (``INPUT_BASE_SHA``, else the event's ``pull_request.base.sha``; fetched when the checkout is
  shallow), with the worktree first on ``PYTHONPATH`` so its agent is the one imported.
* ``rlm-conformance diff BASE HEAD``, the comment (``INPUT_COMMENT``: true/false) and the step summary.

Exit 1 on a regression (unless ``INPUT_FAIL_ON_REGRESSION`` is false), 2 when a run could not start or a setting is
wrong (the message names it), 0 otherwise.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .github_comment import MARKER, CommentError, issue_from_event
from .github_comment import main as comment_main

PROG = "rlm-conformance action"


class ActionError(Exception):
    """A setting or a step that stops the action: the message names it and the fix."""


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = env.get(f"INPUT_{name}", "").strip().lower()
    if not value:
        return default
    if value not in ("true", "false"):
        raise ActionError(f"input {name.lower().replace('_', '-')}: {value!r} is not true or false.")
    return value == "true"


def run_arguments(env: Mapping[str, str]) -> list[str]:
    """``rlm-conformance run``'s options from the inputs (target, profile, scenarios, shards, args)."""
    args = ["--no-progress"]
    for name, flag in (("TARGET", "--target"), ("PROFILE", "--profile"), ("SCENARIOS", "--scenarios-dir"),
                       ("SHARDS", "--shard")):
        value = env.get(f"INPUT_{name}", "").strip()
        if value:
            args += [flag, value]
    try:
        return args + shlex.split(env.get("INPUT_ARGS", ""))
    except ValueError as exc:
        raise ActionError(f"input args: {exc} in {env.get('INPUT_ARGS')!r}. Fix: quote as a shell would.") from None


def _shell(command: str, cwd: Path, what: str) -> None:
    done = subprocess.run(command, shell=True, cwd=cwd)
    if done.returncode != 0:
        raise ActionError(f"input install: `{command}` failed in {cwd} (exit {done.returncode}) before the {what} run.")


def run_suite(checkout: Path, reports: Path, arguments: Sequence[str], *, what: str,
              env: Mapping[str, str]) -> None:
    """``rlm-conformance run`` in ``checkout``, its reports in ``reports``; exit 0 or 1 both leave a report."""
    install = env.get("INPUT_INSTALL", "").strip()
    if install:
        _shell(install, checkout, what)
    child = dict(os.environ)
    child["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [child.get("PYTHONPATH")])])
    command = [sys.executable, "-m", "harness", "run", *arguments, "--reports-dir", str(reports)]
    print(f"::group::rlm-conformance run ({what}, in {checkout})", flush=True)
    done = subprocess.run(command, cwd=checkout, env=child)
    print("::endgroup::", flush=True)
    if done.returncode not in (0, 1) or not (reports / "conformance.json").is_file():
        shard = " (input shards needs `rlm-conformance run --shard`: upgrade the suite)" \
            if "--shard" in arguments else ""
        raise ActionError(f"the {what} run could not start (exit {done.returncode}) in {checkout}: its message is "
                          f"above{shard}. Fix the inputs (target, profile, scenarios, args) or the checkout.")


def base_sha(env: Mapping[str, str]) -> str:
    sha = env.get("INPUT_BASE_SHA", "").strip()
    if sha:
        return sha
    try:
        event = json.loads(Path(env.get("GITHUB_EVENT_PATH", "")).read_text(encoding="utf-8"))
        return str(event["pull_request"]["base"]["sha"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ActionError("no base commit: the event is not a pull request. Fix: pass the base-sha input, or "
                          "base-report (a stored report of the base).") from None


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True)


def run_base(workspace: Path, work: Path, arguments: Sequence[str], env: Mapping[str, str]) -> Path:
    """The base's reports: run in a worktree of the base commit, removed afterwards."""
    sha = base_sha(env)
    if _git(workspace, "cat-file", "-e", f"{sha}^{{commit}}").returncode != 0:
        fetched = _git(workspace, "fetch", "--no-tags", "--depth=1", "origin", sha)
        if fetched.returncode != 0:
            raise ActionError(f"base commit {sha} is not in {workspace} and cannot be fetched "
                              f"({fetched.stderr.strip()[:200]}). Fix: actions/checkout with fetch-depth: 0.")
    tree = work / "base-checkout"
    added = _git(workspace, "worktree", "add", "--detach", str(tree), sha)
    if added.returncode != 0:
        raise ActionError(f"git worktree add {tree} {sha}: {added.stderr.strip()[:300]}")
    try:
        run_suite(tree, work / "base-reports", arguments, what="base", env=env)
    finally:
        _git(workspace, "worktree", "remove", "--force", str(tree))
    return work / "base-reports"


def _on_pull_request(env: Mapping[str, str]) -> bool:
    try:
        issue_from_event(env.get("GITHUB_EVENT_PATH", ""))
    except CommentError:
        return False
    return True


def _commit(workspace: Path, revision: str) -> str:
    """``a1b2c3d`` (the commit's short sha) for the comment, else the revision as given."""
    done = _git(workspace, "rev-parse", "--short", revision)
    return done.stdout.strip() if done.returncode == 0 else revision


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def act(env: Mapping[str, str]) -> int:
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    arguments = run_arguments(env)
    comment, fail = _flag(env, "COMMENT", True), _flag(env, "FAIL_ON_REGRESSION", True)
    # RUNNER_TEMP is emptied after every job: the reports stay there for the steps after this one (upload them).
    work = Path(tempfile.mkdtemp(prefix="rlm-conformance-action-", dir=env.get("RUNNER_TEMP") or None))
    run_suite(workspace, work / "head-reports", arguments, what="head", env=env)
    stored = env.get("INPUT_BASE_REPORT", "").strip()
    base = (workspace / stored) if stored else run_base(workspace, work, arguments, env)
    markdown, data = work / "comment.md", work / "diff.json"
    command = [sys.executable, "-m", "harness", "diff", str(base), str(work / "head-reports"),
               "--markdown", str(markdown), "--json", str(data), "--head-label", _commit(workspace, "HEAD"),
               "--base-label", stored or _commit(workspace, base_sha(env))]
    if env.get("INPUT_REPORT_URL", "").strip():
        command += ["--report-url", env["INPUT_REPORT_URL"].strip()]
    done = subprocess.run(command, cwd=workspace)
    if done.returncode not in (0, 1):
        raise ActionError(f"rlm-conformance diff failed (exit {done.returncode}): its message is above.")
    regressed = done.returncode == 1
    _append(env.get("GITHUB_OUTPUT"), f"regressed={str(regressed).lower()}\ncomment={markdown}\ndiff={data}\n"
                                      f"head-reports={work / 'head-reports'}\n")
    _append(env.get("GITHUB_STEP_SUMMARY"), markdown.read_text(encoding="utf-8"))
    if comment and not _on_pull_request(env):
        print("::notice::rlm-conformance: not a pull-request event, so no comment (the diff is in the job summary).")
    elif comment:
        marker = MARKER if not env.get("INPUT_SHARDS", "").strip() else \
            f"<!-- rlm-conformance shard {env['INPUT_SHARDS'].strip()} -->"
        token = env.get("INPUT_GITHUB_TOKEN") or env.get("GITHUB_TOKEN", "")
        posted = comment_main([str(markdown), "--marker", marker], {**env, "GITHUB_TOKEN": token})
        if posted != 0:
            raise ActionError("the comment was not posted: the reason is above.")
    return 1 if regressed and fail else 0


def main(env: Mapping[str, str] | None = None) -> int:
    try:
        return act(os.environ if env is None else env)
    except (ActionError, CommentError) as exc:
        print(f"::error::{PROG}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
