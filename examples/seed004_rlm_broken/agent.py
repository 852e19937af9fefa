"""seed004_rlm, deliberately broken: the previous turn's flags are cleared by mutating the session.

The one defect: ``context_loader`` clears ``final_answer`` and ``rlm_status`` by writing
``ctx.session.state[key] = None`` on the session object it was handed, instead of putting the
keys in its event's ``state_delta``. The write is visible for the rest of the invocation, so the
turn seems to work, but no event carries it: the session service never stores it. The stored
session keeps the previous turn's ``final_answer``/``rlm_status`` until something overwrites
them, and any process that reads the session back (another replica, a restart, the next
``get_session``) sees a state that differs from the one this run acted on. A turn that ends
without FINAL then keeps the previous turn's answer and ``rlm_status: "done"`` in storage.

Everything else is the correct package (``seed004_rlm``), reused as is.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App

try:  # imported from the repository root as examples.seed004_rlm_broken
    from ..seed004_rlm import keys
    from ..seed004_rlm.agent import build_root_agent
    from ..seed004_rlm.context_loader import ContextLoader
except ImportError:  # loaded by `adk run`/`adk web` with examples/ as the agents directory
    from seed004_rlm import keys
    from seed004_rlm.agent import build_root_agent
    from seed004_rlm.context_loader import ContextLoader

APP_NAME = "seed004_rlm_broken"


class MutatingContextLoader(ContextLoader):
    """The defect: stale flags cleared on the fetched session, never through an event."""

    def clear_turn_flags(self, ctx: InvocationContext) -> dict[str, Any]:
        for key in keys.TURN_FLAGS:
            if ctx.session.state.get(key) is not None:
                ctx.session.state[key] = None  # BROKEN: never persisted
        return {}


def build_broken_root_agent(**kwargs: Any):
    return build_root_agent(context_loader=MutatingContextLoader(name="context_loader",
                                                                 description="Loads the task context."), **kwargs)


root_agent = build_broken_root_agent()
app = App(name=APP_NAME, root_agent=root_agent)
