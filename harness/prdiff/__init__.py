"""What a change did to the agent's behaviour: two runs of the suite (a pull request's base and head) compared.

``load_run`` (``load``) reads a reports folder or a JSON report, ``diff_runs`` (``compare``) compares two runs
scenario by scenario — verdicts (``verdicts``), state deltas and persisted state from the normalised traces
(``state``), model requests (``requests``) — into a ``RunDiff`` (``model``), ``render_diff_markdown``
(``markdown``) writes it sized for a pull-request comment, ``github_comment`` posts or updates that comment, and
``action`` is what the repository's GitHub Action (``action.yml``) runs: head, base, diff, comment.
"""

from __future__ import annotations

from .compare import diff_runs
from .load import load_run
from .markdown import COMMENT_LIMIT, render_diff_markdown
from .model import RunDiff, ScenarioDiff

__all__ = ["COMMENT_LIMIT", "RunDiff", "ScenarioDiff", "diff_runs", "load_run", "render_diff_markdown"]
