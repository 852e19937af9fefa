"""An RLM agent of a third layout, written as a user would (a newcomer's, from the docs alone): no harness import.

The analyst hands code over through its *output_key* — so the key holds every answer, plain text too — and a
BaseAgent runner executes a fenced block in a subprocess, then clears the key; a processor gated by a
before_agent_callback summarises; a BaseAgent finisher escalates once the code printed ``FINAL:``. It keeps
``user:`` and ``app:`` keys of its own.
"""
