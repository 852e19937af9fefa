"""An RLM agent laid out as seed 004 describes: load context, loop (generate, execute, check), format."""

from . import agent

__all__ = ["agent"]
