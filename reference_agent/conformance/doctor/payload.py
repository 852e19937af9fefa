"""Where Job_B's payload (the code the compute installs) comes from, as the job runner decides it.

``RLM_DATABRICKS_WHEEL`` names a wheel of the user's on the volume; otherwise the job runner builds the slim
``rlm_jobb`` wheel from this install and uploads it to a content-addressed folder of the volume before the
first run (``reference_agent.backends.databricks.payload``). The doctor asks that module, so the path it
checks is the one the runner will use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from reference_agent.backends.databricks.config import DatabricksSettings


@dataclass(frozen=True)
class PayloadPlan:
    path: str  # the /Volumes path the job installs
    source: Literal["override", "built"]  # RLM_DATABRICKS_WHEEL, or built from this install at the first run


def job_b_payload(settings: DatabricksSettings) -> PayloadPlan:
    if settings.wheel:
        return PayloadPlan(settings.wheel, "override")
    from reference_agent.backends.databricks.payload import build_payload_wheel

    return PayloadPlan(build_payload_wheel().volume_path(settings.volume_root), "built")
