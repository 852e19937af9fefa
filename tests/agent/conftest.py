from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from reference_agent.config import AgentSettings
from reference_agent.models.scripted import Reply
from reference_agent.testing import LocalStack, build_local_stack


@pytest.fixture
def make_stack(tmp_path: Path) -> Callable[..., LocalStack]:
    def make(script: dict[str, Sequence[Reply]], **kwargs: Any) -> LocalStack:
        settings = kwargs.pop("settings", None) or AgentSettings(home=tmp_path, executor_timeout_s=10)
        return build_local_stack(tmp_path, script=script, settings=settings, **kwargs)

    return make
