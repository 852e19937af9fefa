"""``rlm-conformance diff BASE HEAD``: what a change did to the agent's behaviour, as a pull-request comment."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..files import write_atomic
from .common import EXIT_FAILED, EXIT_OK

PARSER: dict[str, Any] = {
    "name": "diff",
    "help": "compare two runs (a pull request's base and head): verdicts, state deltas, model requests",
    "description": "Compare two runs of the suite, each a reports folder or its conformance.json: per scenario the "
                   "verdicts that changed, the state deltas (keys added, removed or changed per event and author, "
                   "and persisted state), model-request drift and findings new or gone. Prints Markdown sized for "
                   "a pull-request comment (regressions first). Exit 1 on a regression only (a check that now "
                   "fails, a scenario now in error, a scenario gone), 0 otherwise, 2 on bad input.",
}
"""``add_parser``'s arguments: the verb's name, help and description."""


def add_arguments(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("base", metavar="BASE", help="the base's reports folder or JSON report")
    diff.add_argument("head", metavar="HEAD", help="the head's reports folder or JSON report")
    diff.add_argument("--markdown", type=Path, metavar="FILE", help="write the Markdown here instead of stdout")
    diff.add_argument("--json", type=Path, metavar="FILE", dest="json_out",
                      help="also write the whole diff as JSON (nothing cut)")
    diff.add_argument("--report-url", metavar="URL", help="link the comment to HEAD's HTML report at this address")
    diff.add_argument("--base-label", metavar="TEXT", help="how the comment names BASE (default: its path)")
    diff.add_argument("--head-label", metavar="TEXT", help="how the comment names HEAD (default: its path)")
    diff.add_argument("--max-chars", type=int, default=None, metavar="N",
                      help="cut the Markdown to N characters (default 60000; GitHub's comment limit is 65536)")


def run(args: argparse.Namespace) -> int:
    from ..prdiff import COMMENT_LIMIT, diff_runs, load_run, render_diff_markdown
    from ..prdiff.markdown import DEFAULT_MAX_CHARS

    max_chars = args.max_chars if args.max_chars is not None else DEFAULT_MAX_CHARS
    if not 1000 <= max_chars <= COMMENT_LIMIT:
        raise HarnessError(f"--max-chars {max_chars}: use 1000 to {COMMENT_LIMIT} (GitHub's comment limit).")
    base, head = load_run(args.base, role="BASE"), load_run(args.head, role="HEAD")
    diff = diff_runs(base, head, base_label=args.base_label or str(args.base),
                     head_label=args.head_label or str(args.head))
    text = render_diff_markdown(diff, report_url=args.report_url, max_chars=max_chars)
    if args.json_out is not None:
        _write(args.json_out, json.dumps(diff.to_json(), indent=2, ensure_ascii=False, default=repr))
    if args.markdown is not None:
        _write(args.markdown, text)
        print(text.splitlines()[2] if len(text.splitlines()) > 2 else text.strip())
    else:
        sys.stdout.write(text)
    return EXIT_FAILED if diff.regressed else EXIT_OK


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text.encode("utf-8"), mode=0o644)
    except OSError as exc:
        raise HarnessError(f"cannot write {path} ({exc.strerror or exc}). Fix: pass a writable path.") from None


COMMANDS = {"diff": run}
