"""An agent that asks the model in-process with its own ``google.genai.Client()``, as a user would write it.

Each turn's message names one call shape — ``sync``, ``async``, ``stream`` or ``async_stream`` — and the
asker makes that one call; a reporter LlmAgent then reports the answer. No harness import: the client finds
the model through google-genai's own environment variables, as docs/your-agent.md promises.
"""
