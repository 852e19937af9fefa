"""Ids a user's agent makes up, made the same on every offline run.

An agent that names its artifacts or runs with ``uuid.uuid4()`` or ``random`` puts fresh ids into its prompts
and state on every run, so a cassette recorded once could never be replayed (and snapshots would churn). In
replay and scripted mode, while a target the harness built from an App or agent runs, ``uuid.uuid4`` draws from
a generator seeded by the scenario's name and the ``random`` module is seeded the same way; the previous state
is put back afterwards. Live runs keep real randomness; on a live Databricks workspace (scripted model) the
seed also takes the run's nonce, so ids differ from every earlier run's (harness/targets/databricks.py). What
a subprocess draws is its own; ids that still differ are masked when a replayed request is compared with its recording (harness/llm/drift.py).
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterator
from unittest import mock


@contextlib.contextmanager
def deterministic_ids(seed: str) -> Iterator[None]:
    generator = random.Random(f"rlm-conformance:{seed}")
    saved = random.getstate()
    random.seed(f"rlm-conformance:{seed}:random")

    def uuid4() -> uuid.UUID:
        return uuid.UUID(int=generator.getrandbits(128), version=4)

    try:
        with mock.patch.object(uuid, "uuid4", uuid4):
            yield
    finally:
        random.setstate(saved)
