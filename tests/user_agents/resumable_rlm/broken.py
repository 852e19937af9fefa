"""resumable_rlm with a planted resume defect (tests/crash/test_crash_resume.py).

``resummarises``: the summarizer has no idempotency guard. ADK re-runs an agent whose ``end_of_agent`` event was
not stored when it resumes the invocation, so a crash between the summary and that event has the resumed
invocation summarise the same result again.
"""

from __future__ import annotations

from .agent import build_app, build_summarizer

resummarises = build_app(build_summarizer())
