"""seed004_rlm with one state-mechanics defect (see agent.py); for proving checks fail."""

from . import agent

__all__ = ["agent"]
