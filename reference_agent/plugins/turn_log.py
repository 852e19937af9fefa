"""``RlmTurnLogPlugin``: hands the finished turn's ``temp:rlm:turn_log`` to ``run_conversation``.

``temp:`` state lives only in the Runner's in-memory session of one invocation:
it is never persisted, and events yielded by the Runner have already lost their
``temp:`` keys. So when the invocation ends, this plugin *reads* the turn log
from the live session (``after_run_callback``) and keeps a copy for
``run_conversation``, which folds it into ``user:rlm:history`` with an appended
event. The plugin writes no state at all.
"""

from __future__ import annotations

import copy
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner

from .. import state_contract as keys

_Key = tuple[str, str, str]


class RlmTurnLogPlugin(BasePlugin):
    def __init__(self, *, history_max_entries: int) -> None:
        super().__init__(name=keys.TURN_LOG_PLUGIN)
        # How many entries run_conversation keeps in user:rlm:history (the App's setting, carried here).
        self.history_max_entries = history_max_entries
        self._finished: dict[_Key, list[dict[str, Any]]] = {}

    @staticmethod
    def _key(ctx: InvocationContext) -> _Key:
        session = ctx.session
        return session.app_name, session.user_id, session.id

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self._finished.pop(self._key(invocation_context), None)  # a failed earlier turn left nothing behind

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        log = invocation_context.session.state.get(keys.TURN_LOG) or []
        self._finished[self._key(invocation_context)] = copy.deepcopy(list(log))

    def take(self, *, app_name: str, user_id: str, session_id: str) -> list[dict[str, Any]]:
        """The log of the session's last finished invocation (then forgotten); [] if there is none."""
        return self._finished.pop((app_name, user_id, session_id), [])


def turn_log_plugin(runner: Runner) -> RlmTurnLogPlugin | None:
    """The App's ``RlmTurnLogPlugin``, or None when the App has none."""
    plugin = runner.plugin_manager.get_plugin(keys.TURN_LOG_PLUGIN)
    return plugin if isinstance(plugin, RlmTurnLogPlugin) else None
