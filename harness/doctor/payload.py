"""Where Job_B's payload (the code the compute installs) comes from: the one place the doctor decides it.

The contract (issue #18, part 1): the job runner builds a slim pure-Python wheel of the executor from this
install and uploads it to ``<volume_root>/_rlm/wheels/rlm_jobb-<version>-py3-none-any.whl`` at the first run;
``RLM_DATABRICKS_WHEEL`` overrides it with a wheel of the user's on the volume. When the job runner exposes its
own function for this, point ``job_b_payload`` at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from reference_agent.backends.databricks.config import DatabricksSettings

PAYLOAD_FOLDER = "_rlm/wheels"


@dataclass(frozen=True)
class PayloadPlan:
    path: str  # the /Volumes path the job installs
    source: Literal["override", "built"]  # RLM_DATABRICKS_WHEEL, or built from this install at the first run


def job_b_payload(settings: DatabricksSettings) -> PayloadPlan:
    if settings.wheel:
        return PayloadPlan(settings.wheel, "override")
    return PayloadPlan(f"{settings.volume_root}/{PAYLOAD_FOLDER}/rlm_jobb-{_version()}-py3-none-any.whl", "built")


def _version() -> str:
    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0.0.0"
