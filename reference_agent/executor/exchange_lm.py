"""Exchange mode of ``llm_query``: requests and answers as files in a folder (``--lm-exchange DIR``).

For Job_B on a workspace when the caller's model must answer (the harness's
scripted model against a real workspace): nothing on the cluster can reach the
caller's LM bridge, but both sides reach the volume. Each request is written
atomically as ``DIR/<n>.request.json`` (``{"id": n, "prompts": [...]}``); the job
runner, polling the run, lists the folder through the Files API, answers with its
``sub_lm`` exactly as the LM bridge does (same budget checks, same error texts)
and uploads ``DIR/<n>.answer.json`` (the bridge's reply object). The executor
waits for it, polling the file; a model that never answers is bounded by the
executor's soft timeout like any slow call.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .lm_client import BudgetedLmClient, read_reply
from .result import write_json_atomic

POLL_INITIAL_S, POLL_MAX_S = 0.05, 1.0


def request_name(request_id: int) -> str:
    return f"{request_id}.request.json"


def answer_name(request_id: int) -> str:
    return f"{request_id}.answer.json"


class ExchangeLmClient(BudgetedLmClient):
    """``llm_query`` answered by whoever serves the exchange folder (same surface as ``LmClient``)."""

    def __init__(self, folder: str, *, max_calls: int) -> None:
        super().__init__(max_calls=max_calls)
        self.folder = Path(folder)

    def _send(self, request_id: int, prompts: list[str]) -> tuple[list[str], list[Any]]:
        answer = self.folder / answer_name(request_id)
        answer.unlink(missing_ok=True)  # an earlier attempt's answer is not this request's
        write_json_atomic(self.folder / request_name(request_id), {"id": request_id, "prompts": prompts})
        delay = POLL_INITIAL_S
        while True:
            try:
                reply = json.loads(answer.read_text(encoding="utf-8"))
            except (FileNotFoundError, ValueError):  # not there yet (an upload replaces it whole)
                time.sleep(delay)
                delay = min(POLL_MAX_S, delay * 1.5)
                continue
            if isinstance(reply, dict):
                return read_reply(reply, request_id, prompts, where=f"the sub-LM exchange ({answer})")
            return read_reply({"id": request_id, "error": f"{answer} is not a JSON object"}, request_id, prompts)

    def close(self) -> None:
        pass
