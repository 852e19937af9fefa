"""A target profile: how a target's layout maps onto what the checks reason about.

The checks speak of roles (the analyst that writes code, who executes it, who
summarises), of state keys (the summary, the final answer, per-turn flags) and of
the agent's state contract. A profile names them for one agent. Every field has a
neutral default — "this agent has no such thing" — and a check whose concept the
profile does not map is ``n/a`` with the reason, never a false failure. The
reference agent ships its own profile (``reference_agent/conformance_profile.yaml``);
a user writes one YAML file for theirs (``rlm-conformance init`` drafts it).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import HarnessError

class KeyRule(BaseModel):
    """One contract row: which writers may put ``key`` (or keys starting with it) in a delta."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    writers: tuple[str, ...]
    family: bool = False

    def matches(self, key: str) -> bool:
        return key.startswith(self.key) if self.family else key == self.key


class TargetProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # --- who the target is ---------------------------------------------------------------------------------------
    name: str | None = Field(default=None, description="Stable target name: cassettes/<name>/ and snapshots/<name>/ "
                                                        "(default: derived from --target).")
    target: str | None = Field(default=None, description="The agent: 'package.module:attr' naming an ADK App, a root "
                                                          "agent or a zero-argument factory of either.")
    # --- roles: agent, tool and key names of the target (null: the agent has no such role) ----------------------
    loop_agent: str | None = Field(default=None, description="The LoopAgent that repeats analyst -> executor -> ... "
                                                             "(null: every LoopAgent of the tree).")
    analyst: str | None = Field(default=None, description="The LlmAgent that writes code.")
    delegate_tool: str | None = Field(default=None, description="The tool the analyst calls to hand code over "
                                                                "(one delegation per call whose event writes state).")
    delegation_key: str | None = Field(default=None, description="Or: the state key whose write hands code over (e.g. "
                                                                 "the analyst's output_key holding the code).")
    delegation_pattern: str | None = Field(
        default=None, description="With delegation_key: a regular expression (Python re.search) a written value must "
                                  "match to hand code over, e.g. '```' when the key is an output_key the analyst "
                                  "writes on every answer, code or plain text (null: every non-blank value does).")
    job_builder: str | None = Field(default=None, validation_alias=AliasChoices("executor", "job_builder"),
                                    description="The agent that executes the code (alias: executor); an event of it "
                                                "with a state delta is one execution.")
    execution_key: str | None = Field(default=None, description="Or: a state key written once per execution (by any "
                                                                "author); takes precedence over the executor's events.")
    code_executor: str | None = Field(
        default=None, description="Or: the LlmAgent whose ADK code_executor runs its code (LlmAgent(code_executor="
                                  "...)): its executable_code parts (or code in its executor's code_block_delimiters) "
                                  "are the delegations, its code_execution_result parts the executions; takes "
                                  "precedence over delegate_tool, delegation_key, job_builder and execution_key.")
    results_processor: str | None = Field(default=None, description="The agent that summarises an execution's "
                                                                    "results: an LlmAgent, or an agent digesting "
                                                                    "them in code (processor_model_runs is then "
                                                                    "n/a) (null: none).")
    summary_author: str | None = Field(default=None, description="Who writes the summary key (default: the "
                                                                 "results_processor).")
    exit_tool: str | None = Field(default=None, description="The tool that ends the loop.")
    driver: str | None = Field(default=None, description="The agent's own turn function, 'package.module:function' "
                                                         "(sync or async), called per turn instead of the harness's "
                                                         "plain Runner loop; its returned outcome is what "
                                                         "outcome_from_storage judges (harness/targets/driver.py).")
    driver_args: dict[str, Any] = Field(default_factory=dict, description="More keyword arguments for the driver "
                                                                         "(e.g. timeout_seconds: 60).")
    driver_outcome: dict[Literal["termination", "final_answer", "delegations", "error"], str] = Field(
        default_factory=dict, description="Outcome field -> the attribute (or key) of what the driver returns that "
                                          "holds it, e.g. {termination: status, final_answer: response_text}; "
                                          "unmapped fields are read under their own name when present.")
    driver_terminations: dict[str, str | None] = Field(
        default_factory=dict, description="The driver's termination values -> the scenario's names (null: 'no "
                                          "termination stored', e.g. {success: null}); others go through "
                                          "termination_map.")
    run_conversation_author: str | None = Field(default=None, description="Author of the events the target's own "
                                                                          "driver appends outside the agents "
                                                                          "(cleanup, outcome, history).")
    app_tools: tuple[str, ...] = Field(default=(), description="Tools whose calls save app-wide data (app: keys).")
    # --- state keys ------------------------------------------------------------------------------------------------
    context_key: str | None = Field(default=None, description="Session state key the scenario's context is put under "
                                                              "before the first turn (targets the harness builds).")
    summary_key: str | None = Field(default=None, description="The durable summary of the latest execution, which "
                                                              "must reach the analyst's next prompt.")
    iteration_key: str | None = Field(default=None, description="The iteration counter (the key holds an integer).")
    final_answer_key: str | None = Field(default=None, description="Where the final answer is stored.")
    termination_key: str | None = Field(default=None, description="Where the reason the loop ended is stored (the "
                                                                  "key holds a scalar, named through termination_map).")
    termination_map: dict[str, str] = Field(
        default_factory=dict, description="The target's termination values -> the names scenarios use (final_answer, "
                                          "exit_loop, max_iterations, fatal_error, ...); unmapped values pass through.")
    history_key: str | None = Field(default=None, description="user: key holding the user's history across "
                                                              "sessions: a list of entries, newest last, each "
                                                              "holding its turn's question; written only by "
                                                              "appended events.")
    prompt_app_keys: tuple[str, ...] = Field(default=(), description="app: keys the analyst's prompt must show "
                                                                     "(for a dict, its item names).")
    stale_flag_keys: tuple[str, ...] = Field(default=(), description="Per-turn flags (a list of state keys) that "
                                                                     "must be cleared by an appended event before "
                                                                     "the next turn's work.")
    artifact_status_prefix: str | None = Field(
        default=None, description="Consumed marks as state keys: '<prefix><artifact id>' holds the artifact's status "
                                  "(or a dict with 'status'); used when the target exposes no artifact registry.")
    consumed_value: str | int | float | bool = Field(
        default="consumed", description="The status meaning 'analysed' (any JSON scalar: 'consumed', true, 2, ...).")
    consumed_by: Literal["same_turn", "next_turn"] = Field(
        default="same_turn", description="When an analysed artifact must be marked consumed_value: in the turn that "
                                         "analysed it (same_turn), or by the start of the session's next turn "
                                         "(next_turn: a design that marks it when the next turn begins; an artifact "
                                         "of a session's last turn is then not due).")
    pruning_plugins: tuple[str, ...] = Field(
        default=("RlmContextPruningPlugin",), description="Plugin class names that count as a pruning plugin."
    )
    contract: tuple[KeyRule, ...] | None = Field(default=None, description="Which author may write which key (null: "
                                                                            "minimal_deltas is n/a).")
    # Which contract writers each event author may act for: a tool's writes land in its
    # agent's events, a plugin's after_agent writes in the agent it ran after.
    author_writers: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    preview_keys: dict[str, Literal["stdout", "stderr"]] = Field(
        default_factory=dict,
        description="State keys holding a preview of the executor's output -> which stream they preview (stdout "
                    "previews are also judged against the output itself: whole when it fits, cut when not).")
    preview_chars: int | None = Field(default=None, ge=1,
                                      description="Characters of output a preview may hold (a scenario's "
                                                  "limits.preview_chars overrides it).")
    preview_marker_chars: int = Field(
        default=80, ge=0, description="Room a cut preview may take beyond preview_chars for its 'cut here' marker.")
    preview_cut_marker: str | None = Field(
        default=None,
        description="Regular expression of the marker a cut preview puts where output was left out; what surrounds "
                    "it is output. With it, a cut preview is judged exactly (at most preview_chars characters of "
                    "output); without it (null), only its length is.")
    none_semantics: Literal["auto", "delete", "store"] = Field(
        default="auto", description="What None in a delta means: delete the key, or store null. auto: what the "
                                    "session service the run used does (ADK's services store None)."
    )
    session_service_args: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for a --session-service module:attr (a class or "
                                          "factory), e.g. {db_path: '{work}/sessions.duckdb'}: '{work}' in a string "
                                          "becomes the scenario's private work folder.")
    stale_writes: Literal["auto", "reject", "accept"] = Field(
        default="auto", description="What the session service does with a stale writer's append (two writers "
                                    "holding one fetched session): reject it (any exception that stores nothing "
                                    "of it and leaves the session readable: optimistic concurrency) or accept it. auto: what the service is declared to do (ADK's "
                                    "and the reference's), else what a short probe of it observes. Say reject to "
                                    "make stale_writer_rejected fail on a service that accepts.")
    # Written out, not read from an agent's executor: a defect there must not widen the allow-list.
    executor_env_allowed: tuple[str, ...] = Field(
        default=("HOME", "LANG", "PATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONPATH"),
        description="The only environment variables the code the executor runs may see (locale variables LC_* "
                    "aside); any other name, and any value holding a planted canary credential, fails "
                    "executor_env_clean.")

    recovery: Literal["retry", "next_turn", "resume"] = Field(
        default="retry", description="How the target's deployment recovers a turn its process died in ('crash' "
                                     "runs it so): retry (the client sends the crashed turn's message again), "
                                     "next_turn (the user's next message, or 'continue' when there is none) or "
                                     "resume (ADK resumes the interrupted invocation: needs a resumable App and "
                                     "a target with resume_turn, else n/a).")
    initial_state: dict[str, Any] = Field(
        default_factory=dict,
        description="State every session explore generates starts with (a mapping key -> value), e.g. a key the "
                    "analyst's instruction reads ({silo}) that your app sets before the first turn. Hand-written "
                    "scenarios set their own initial_state.")

    @field_validator("delegation_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc}); quote it in YAML and escape what re "
                                 f"treats as special, e.g. '```' or '^SELECT'") from None
        return value

    def hands_over_code(self, value: Any) -> bool:
        """Whether a write of ``value`` to ``delegation_key`` is a delegation: a non-blank value (clearing the key
        after running it is cleanup) that matches ``delegation_pattern`` when one is set."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return False
        if self.delegation_pattern is None:
            return True
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return re.search(self.delegation_pattern, text) is not None

    @property
    def summary_writer(self) -> str | None:
        return self.summary_author or self.results_processor

    def termination_name(self, value: Any) -> Any:
        """The scenario's name for a termination value the target stored."""
        if isinstance(value, str):
            return self.termination_map.get(value, value)
        if isinstance(value, (bool, int, float)):  # YAML map keys are strings: true / 1 are looked up as written
            return self.termination_map.get(json.dumps(value), self.termination_map.get(str(value), value))
        return value

    def is_consumed(self, status: Any) -> bool:
        """Whether an artifact status (kept as text: registries and state keys alike) is ``consumed_value``."""
        wanted = self.consumed_value
        if isinstance(wanted, str):
            return status == wanted
        return status is not None and str(status) in (str(wanted), json.dumps(wanted))

    def unmapped(self, *fields: str) -> str | None:
        """Why a check cannot apply: the first of ``fields`` the profile leaves unset, or None."""
        for name in fields:
            value = getattr(self, name)
            if value is None or value == () or value == {}:
                return (f"the target profile maps no {name} ({TargetProfile.model_fields[name].description}); "
                        f"set it in the profile to check this")
        return None

    def writers_for_author(self, author: str) -> tuple[str, ...]:
        return self.author_writers.get(author, (author,))

    def rule_for(self, key: str) -> KeyRule | None:
        return next((rule for rule in self.contract or () if rule.matches(key)), None)


class ProfileError(HarnessError):
    """A target profile file that cannot be used; the message names the file, the line, the field and the fix."""


def load_profile(path: Path) -> TargetProfile:
    """The profile in ``path``; every problem one line: ``file:line: field 'x': what is wrong. Fix: ...``."""
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ProfileError(f"{path}: cannot read the target profile ({exc}). Fix the file, or drop the profile "
                           f"(--profile, the scenario's 'profile:', [tool.rlm-conformance] profile).") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}:1: a target profile is a mapping of fields (name: ..., analyst: ...), got "
                           f"{type(data).__name__}. Fields: {', '.join(PROFILE_FIELDS)}.")
    try:
        return TargetProfile.model_validate(data)
    except ValidationError as exc:
        lines = _key_lines(node)
        problems = [_describe(error, lines, path) for error in exc.errors()]
        raise ProfileError("\n".join(problems)) from None


PROFILE_FIELDS = tuple(name for name, f in TargetProfile.model_fields.items())


def _key_lines(node: Any) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def _describe(error: Any, lines: dict[str, int], path: Path) -> str:
    loc = [str(part) for part in error["loc"]]
    top = loc[0] if loc else ""
    where = f"{path}:{lines[top]}" if top in lines else str(path)
    field = ".".join(loc)
    if error["type"] == "extra_forbidden":
        yaml_names = [*PROFILE_FIELDS, "executor"]
        guess = difflib.get_close_matches(top, yaml_names, n=1, cutoff=0.6)
        fix = f"did you mean '{guess[0]}'?" if guess else f"use one of: {', '.join(yaml_names)}"
        return f"{where}: field '{field}': unknown field. Fix: {fix}"
    described = TargetProfile.model_fields.get(top)
    hint = f" ('{top}': {described.description})" if described and described.description else ""
    return f"{where}: field '{field}': {error['msg']}, got {error.get('input')!r}.{hint}"


def profile_json_schema() -> dict[str, Any]:
    """The JSON Schema of a profile file (editors: ``# yaml-language-server: $schema=...``)."""
    schema = TargetProfile.model_json_schema(mode="validation", by_alias=False)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "profile.schema.json", **schema}
