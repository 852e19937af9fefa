"""What the executed code printed, per execution, from wherever the target lets the harness read it.

The probe checks (executor_env_clean, executor_confined) judge lines the delegated code prints. A target with an
executor record (``BuiltTarget.list_executions``: the reference agent's registry and its result JSON) gives each
run's stdout. Another agent keeps what its code printed in its state: the preview keys its profile maps to
stdout (``preview_keys``), written by the execution's event — enough for the probes' few short lines. Without
either, nothing the code printed is visible, and a check must say so rather than call the code silent.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..targets.profile import TargetProfile
from ..trace.model import Trace
from .evidence import name_event
from .timeline import appended_events


@dataclass(frozen=True)
class Printed:
    label: str  # the execution, for evidence
    text: str  # what it printed, as far as the source holds it
    mode: str | None = None  # the kind of Job_B process, when the executor record says


def printed_outputs(trace: Trace, profile: TargetProfile) -> list[Printed] | None:
    """Each execution's printed output, in order; None when the target shows the harness no output at all."""
    if trace.executions:
        out = []
        for record in sorted(trace.executions, key=lambda r: (r.session_id, r.iteration)):
            process = record.metrics.get("executor_process") if isinstance(record.metrics, dict) else None
            out.append(Printed(f"artifact {record.artifact_id} (session {record.session_id}, iteration "
                               f"{record.iteration})", f"{record.stdout_head or ''}\n{record.stdout_tail or ''}",
                               process.get("mode") if isinstance(process, dict) else None))
        return out
    keys = [key for key, stream in profile.preview_keys.items() if stream == "stdout"]
    if not keys:
        return None
    out = []
    for event in appended_events(trace):
        values = [event.emitted_delta[k] for k in keys if isinstance(event.emitted_delta.get(k), str)]
        if values:
            out.append(Printed(f"{name_event(event)}, its {', '.join(map(repr, keys))} preview", "\n".join(values)))
    return out


def unseen_reason(profile: TargetProfile) -> str:
    """Why nothing the code printed is visible (``printed_outputs`` returned None)."""
    return ("the target shows the harness no record of what its executed code printed: no executor record (the "
            "reference agent's registry gives one) and no stdout preview key in the profile (preview_keys: "
            "{<state key holding the output>: stdout})")
