"""LLM modes of the harness: replay (cassettes), scripted (local endpoint), live.

Import from the submodules (``harness.llm.modes``, ``.scripted_endpoint``,
``.cassettes``, ``.network_guard``); this package imports nothing heavy.
"""
