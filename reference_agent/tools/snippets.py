"""``save_snippet``: the analyst keeps reusable code in app-wide state (``app:rlm:snippets``).

``app:`` scope is shared by every user of the app, so a snippet one analyst saves
appears in every later analyst prompt, whoever the user. The write goes through
``tool_context.state`` (so it lands in the tool's event delta and is persisted in
the app-state row). Bounded: at most ``max_snippets`` (oldest out), code at most
``snippet_max_chars`` characters; saving an existing name replaces it.
"""

from __future__ import annotations

import re
from typing import Any

from google.adk.tools import FunctionTool
from google.adk.tools.tool_context import ToolContext

from .. import state_contract as keys
from ..history import cut
from ..wiring import RuntimeServices

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
DESCRIPTION_CHARS = 200


def make_snippet_tool(services: RuntimeServices) -> FunctionTool:
    settings = services.settings

    def save_snippet(name: str, code: str, description: str, tool_context: ToolContext) -> dict[str, Any]:
        """Save reusable Python code for later tasks; every analyst of this app will see it in their prompt.

        Args:
          name: Short identifier (letters, digits, _ . -), e.g. "sales_total".
          code: The Python source to keep.
          description: One line on what the code does and when to use it.
        """
        if not NAME.match(name or ""):
            return {"status": "rejected", "error": "name must be 1-64 letters, digits, '_', '.' or '-', "
                                                   "starting with a letter or '_'"}
        if not code.strip():
            return {"status": "rejected", "error": "code is empty; pass the Python source to keep"}
        if len(code) > settings.snippet_max_chars:
            return {"status": "rejected", "error": f"code is {len(code)} characters; snippets hold at most "
                                                   f"{settings.snippet_max_chars}"}
        current = tool_context.state.get(keys.SNIPPETS)
        snippets = {k: v for k, v in current.items() if k != name} if isinstance(current, dict) else {}
        snippets[name] = {"code": code, "description": cut(description, DESCRIPTION_CHARS) or ""}
        dropped = list(snippets)[: max(0, len(snippets) - settings.max_snippets)]
        for old in dropped:
            del snippets[old]
        tool_context.state[keys.SNIPPETS] = snippets
        return {"status": "saved", "name": name, "snippets": len(snippets), "dropped": dropped}

    return FunctionTool(save_snippet)
