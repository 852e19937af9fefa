"""LEGACY — the seeds' *before* state, kept only so the conformance checks can be shown failing.

Do not use this agent. It reproduces, on purpose, every state-mechanics bug the
migration plan (seeds 000–002) removes:

* ``RlmContextPruningPlugin`` wired, clearing glue by writing ``None``;
* ``job_builder`` without a stage gate, mutating ``ctx.session.state`` and
  emitting the whole state as its delta (and nothing at all on errors);
* the results injected by a ``before_agent_callback`` that returns Content, so
  ``results_processor``'s model never runs, and no ``output_key``;
* the analyst's prompt as a string with ``{rlm:last_results_summary?}``, which
  ADK leaves in the prompt verbatim;
* full stdout kept in session state (``rlm:execution_stdout``);
* ``run_conversation`` clearing flags by mutating a fetched session and
  reading its outcome from ``temp:`` flags in yielded events;
* a session service that stores ``None`` as null (ADK's own DatabaseSessionService).
"""
