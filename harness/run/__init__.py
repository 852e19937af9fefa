"""The run stage: one scenario through its target, turn by turn, into a trace and its verdicts.

``runner.run_scenario`` is the pipeline the CLI, the pytest plugin, explore and export share; ``options`` says how a
run goes (``RunOptions``); ``pool`` runs whole scenarios in worker processes (``run -j``, ``explore -j``). Around a
run: the scenario's clock (``clock``), ids made the same on every run (``determinism``), canary credentials
(``canaries``) and escape targets (``escape_probe``), the session-service probe and its sharing between workers
(``service_probe``, ``probe_share``), a user's service in the scenario's folder (``service_folder``), what storage
holds after a turn (``capture``), which part raised (``failures``), traces spooled to disk (``trace_spool``) and the
accepted findings of a baseline file (``baseline``).
"""
