"""Every test's ``rlm-conformance run`` (``main([...])`` in-process) runs its scenarios in-process, as before
``-j`` existed: many tests monkeypatch the harness, which a worker process would not see. The tests of ``-j``
itself (tests/harness/test_parallel_run.py) pass ``-j`` explicitly."""

import os

os.environ.setdefault("RLM_CONFORMANCE_JOBS", "1")
