"""A target profile: the names a target uses for the roles the checks talk about.

The checks speak of roles (the analyst, the job builder, the summary key ...).
The reference agent's names are the defaults, read from its state contract; a
user whose agent uses other names passes a profile YAML (``--profile``) so the
same checks apply to their agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reference_agent import state_contract as sc
from reference_agent.config import AgentSettings


class KeyRule(BaseModel):
    """One contract row: which writers may put ``key`` (or keys starting with it) in a delta."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    writers: tuple[str, ...]
    family: bool = False

    def matches(self, key: str) -> bool:
        return key.startswith(self.key) if self.family else key == self.key


def _reference_contract() -> tuple[KeyRule, ...]:
    return tuple(KeyRule(key=s.key, writers=s.writers, family=s.family) for s in sc.CONTRACT)


class TargetProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    loop_agent: str = Field(default="orchestrator_loop", description="The LoopAgent.")
    analyst: str = Field(default=sc.ANALYST, description="The LlmAgent that writes code and delegates.")
    job_builder: str = Field(default=sc.JOB_BUILDER, description="The agent that runs Job_B.")
    results_processor: str = Field(default=sc.RESULTS_PROCESSOR, description="The LlmAgent that summarises results.")
    delegate_tool: str = Field(default=sc.DELEGATE_TOOL)
    exit_tool: str = Field(default=sc.EXIT_TOOL)
    run_conversation_author: str = Field(default=sc.RUN_CONVERSATION, description="Author of cleanup/outcome events.")
    summary_key: str = Field(default=sc.LAST_RESULTS_SUMMARY)
    iteration_key: str = Field(default=sc.ITERATION)
    final_answer_key: str = Field(default=sc.FINAL_ANSWER)
    termination_key: str = Field(default=sc.TERMINATION_REASON)
    history_key: str = Field(default=sc.USER_HISTORY, description="user: key holding the user's history across "
                                                                  "sessions; written only by run_conversation.")
    app_tools: tuple[str, ...] = Field(
        default=(sc.SNIPPET_TOOL,), description="Tools whose calls save app-wide data (app: keys) for every user.")
    prompt_app_keys: tuple[str, ...] = Field(
        default=(sc.SNIPPETS,), description="app: keys the analyst's prompt must show (for a dict, its item names).")
    stale_flag_keys: tuple[str, ...] = Field(
        default=(sc.EXIT_REQUESTED, sc.FATAL_ERROR, sc.FATAL_ERROR_MSG, sc.FINAL_ANSWER, sc.TERMINATION_REASON),
        description="Per-turn flags that must be cleared by an appended event before the next turn.",
    )
    pruning_plugins: tuple[str, ...] = Field(
        default=("RlmContextPruningPlugin",), description="Plugin class names that count as a pruning plugin."
    )
    contract: tuple[KeyRule, ...] = Field(default_factory=_reference_contract)
    # Which contract writers each event author may act for: a tool's writes land in its
    # agent's events, a plugin's after_agent writes in the agent it ran after.
    author_writers: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: {
            sc.ANALYST: (sc.ANALYST, sc.DELEGATE_TOOL, sc.EXIT_TOOL, sc.SNIPPET_TOOL),
            sc.JOB_BUILDER: (sc.JOB_BUILDER,),
            sc.RESULTS_PROCESSOR: (sc.RESULTS_PROCESSOR, sc.STAGE_PLUGIN, sc.INJECTION_PLUGIN),
            sc.RUN_CONVERSATION: (sc.RUN_CONVERSATION,),
        }
    )
    preview_keys: dict[str, Literal["stdout", "stderr"]] = Field(
        default_factory=lambda: {sc.EXECUTION_STDOUT: "stdout", sc.EXECUTION_STDERR: "stderr"},
        description="State keys holding a preview of Job_B's output -> which stream they preview (stdout "
                    "previews are also judged against the output itself: whole when it fits, cut when not).")
    preview_chars: int = Field(default=AgentSettings.preview_chars, ge=1,
                               description="Characters of output a preview may hold (a scenario's "
                                           "limits.preview_chars overrides it).")
    preview_marker_chars: int = Field(
        default=80, ge=0, description="Room a cut preview may take beyond preview_chars for its 'cut here' marker.")
    preview_cut_marker: str | None = Field(
        default=r"\n\.\.\. \[\d+ characters omitted\] \.\.\.\n",
        description="Regular expression of the marker a cut preview puts where output was left out; what surrounds "
                    "it is output. With it, a cut preview is judged exactly (at most preview_chars characters of "
                    "output); without it (null), only its length is.")
    none_semantics: Literal["delete", "store"] = Field(
        default="delete", description="What None in a delta means for the target's session service."
    )
    # Written out, not read from reference_agent/backends/process.py: a defect there must not widen the allow-list.
    executor_env_allowed: tuple[str, ...] = Field(
        default=("HOME", "LANG", "PATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONPATH"),
        description="The only environment variables the code Job_B runs may see (locale variables LC_* aside); "
                    "any other name, and any value holding a planted canary credential, fails executor_env_clean.")

    def writers_for_author(self, author: str) -> tuple[str, ...]:
        return self.author_writers.get(author, (author,))

    def rule_for(self, key: str) -> KeyRule | None:
        return next((rule for rule in self.contract if rule.matches(key)), None)


def load_profile(path: Path) -> TargetProfile:
    from ..errors import HarnessError

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return TargetProfile.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise HarnessError(f"{path}: cannot read the target profile ({exc}). Fix the file or drop --profile.") from None
    except ValidationError as exc:
        problems = "; ".join(f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors())
        raise HarnessError(f"{path}: invalid target profile: {problems}. Fields: {', '.join(TargetProfile.model_fields)}.") from None
