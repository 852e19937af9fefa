"""``rlm-conformance init``: a project drafted from a user's agent — its profile (``project``), the roles read
off the agent's code (``roles``) and the session service its module offers (``session_service``)."""
