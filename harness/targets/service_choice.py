"""How the session service of a run is chosen, said once: ``run``/``record`` help, the pytest plugin's help and
the error messages all quote these words (the docs spell them out in docs/your-agent.md, "Your own session
service"). Plain text only, so the CLI can print it without importing ADK."""

SERVICE_CHOICES = "delta, adk-memory, adk-sqlite or module:attr"

SERVICE_CHOICE = (
    "the session service the Runner gets: delta (the default) is the target's own — DeltaSessionService on "
    "DuckDB for the reference agent, ADK's InMemorySessionService for an App or agent the harness builds; "
    "adk-memory and adk-sqlite are ADK's; module:attr is yours (a class or factory, called with the profile's "
    "session_service_args, else an `env` parameter, else the scenario's folder, else nothing: "
    "docs/your-agent.md)"
)
