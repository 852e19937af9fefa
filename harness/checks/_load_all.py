"""Imports every check module; importing a module registers its check. The order here is the report order."""

from __future__ import annotations

from . import (  # noqa: F401
    no_pruning_plugin,
    summary_persisted,
    no_temp_persisted,
    stage_gating,
    artifacts_consumed,
    minimal_deltas,
    none_deletes,
    no_unpersisted_mutation,
    summary_reaches_prompt,
    state_budget,
    previews_bounded,
    stale_flags_cleared,
    processor_model_runs,
    instructions_render,
    outcome_from_storage,
    loop_without_transfers,
    user_history_scoped,
    history_folded_by_event,
    history_keeps_newest,
    app_data_shared,
    context_budget,
    sublm_batch_concurrent,
    executor_env_clean,
    executor_confined,
    service_contract,
    scenario_expectations,
    adk_recording_matches,
)
