"""The reference RLM agent: ADK LoopAgent over analyst -> job_builder -> results_processor.

``reference_agent.agent`` (imported lazily by ADK's loader) builds the App from
the environment; library users build it with ``reference_agent.app.build_app``.
"""
