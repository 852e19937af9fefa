"""What changed between a cassette and its re-recording: per model call, the request and the answer.

Model calls are paired as the replay pairs them: by caller (which agent, or which sub-LM prompt,
``matchers.caller_of``) and, within a caller, in order. A request is compared in ``drift.normalized_body``'s form
(both ADK lines' common encoding, the run's fresh values masked), so only what the agent sent differently counts;
an answer by what the model said (its text and function calls), not by ids, usage counts or headers. Of the
Databricks REST calls only the SQL statements' text counts (in order, as caller ``databricks sql``): the replay pairs
those calls by path and order alone, so an agent that now sends other SQL would still replay, on recorded evidence
that no longer describes it; their parameters, and every other REST call, carry timestamps and row ids by nature
and are left out, as drift.py leaves them. The scenario
identity a cassette carries (harness/recording/identity.py) is compared too: a re-recording made after the
scenario changed is a change even when every call is the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from ..llm.fresh_values import mask_fresh_values
from .drift import first_difference, is_model_call, normalized_body
from .identity import METADATA_KEY
from .matchers import caller_of


@dataclass(frozen=True)
class CallChange:
    """One model call whose request or answer differs between the old and the new recording."""

    kind: Literal["request", "answer", "added", "removed"]
    caller: str  # the agent (or sub-LM prompt) that made the call
    call: int  # its position among that caller's calls (0-based)
    old: str  # an excerpt around the first difference (the whole answer for answers; "" when added)
    new: str

    def describe(self) -> str:
        where = f"{self.caller[:60]} call #{self.call + 1}"
        if self.kind == "added":
            return f"{where}: new call, answered {self.new!r}"
        if self.kind == "removed":
            return f"{where}: no longer made (was answered {self.old!r})"
        return f"{where}: {self.kind} was ...{self.old}... now ...{self.new}..."


@dataclass(frozen=True)
class Call:
    caller: str
    request: str  # normalized body
    answer: str  # what the model said


def load_calls(path: Path) -> tuple[dict[str, Any], list[Call]]:
    """A cassette file's scenario identity and its model calls, in recorded order."""
    from vcr.request import Request

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    calls: list[Call] = []
    for interaction in data.get("interactions") or []:
        request = interaction.get("request") or {}
        recorded = Request(request.get("method", "POST"), request.get("uri", ""), request.get("body"),
                           request.get("headers") or {})
        if not is_model_call(recorded.path):
            statement = sql_statement(recorded.path, recorded.body)
            if statement is not None:
                calls.append(Call(SQL_CALLER, statement, ""))
            continue
        body = ((interaction.get("response") or {}).get("body") or {}).get("string", "")
        calls.append(Call(caller_of(recorded), normalized_body(recorded.body), answer_text(body)))
    return (data.get("metadata") or {}).get(METADATA_KEY) or {}, calls


SQL_CALLER = "databricks sql"


def sql_statement(path: str, body: Any) -> str | None:
    """The statement text a Databricks SQL Statement Execution request sent (None for any other request)."""
    if not path.endswith("/sql/statements"):
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, (bytes, bytearray)) else str(body or "")
    try:
        statement = json.loads(text).get("statement")
    except (ValueError, AttributeError):
        return None
    return " ".join(statement.split()) if isinstance(statement, str) else None


def answer_text(body: Any) -> str:
    """What a model answer said: its parts' text and function calls, one per line (raw text if not Gemini JSON)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, (bytes, bytearray)) else str(body or "")
    try:
        data = json.loads(text)
        parts = data["candidates"][0]["content"]["parts"]
    except (ValueError, KeyError, IndexError, TypeError):
        return mask_fresh_values(text)
    said = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if "text" in part:
            said.append(str(part["text"]))
        if "functionCall" in part:
            call = part["functionCall"] or {}
            said.append(f"{call.get('name')}({json.dumps(call.get('args') or {}, sort_keys=True)})")
    return mask_fresh_values("\n".join(said))


def compare_cassettes(old: Path, new: Path) -> tuple[list[str], list[CallChange]]:
    """The identity parts that differ (``["script: ab12 -> cd34"]``) and every model call that changed."""
    old_identity, old_calls = load_calls(old)
    new_identity, new_calls = load_calls(new)
    old_parts, new_parts = old_identity.get("parts") or {}, new_identity.get("parts") or {}
    identity = [f"{key}: {old_parts.get(key)} -> {new_parts.get(key)}" for key in sorted({*old_parts, *new_parts})
                if old_parts.get(key) != new_parts.get(key)]
    changes: list[CallChange] = []
    for caller in dict.fromkeys(c.caller for c in [*old_calls, *new_calls]):
        before = [c for c in old_calls if c.caller == caller]
        after = [c for c in new_calls if c.caller == caller]
        for index in range(max(len(before), len(after))):
            if index >= len(before):
                changes.append(CallChange("added", caller, index, "", after[index].answer))
            elif index >= len(after):
                changes.append(CallChange("removed", caller, index, before[index].answer, ""))
            else:
                a, b = before[index], after[index]
                if a.request != b.request:
                    changes.append(CallChange("request", caller, index, *first_difference(a.request, b.request)))
                if a.answer != b.answer:
                    changes.append(CallChange("answer", caller, index, a.answer, b.answer))
    return identity, changes
