"""``rlm-conformance explore``: scenarios nobody has to write (issue 32).

The design, one job a module, data flowing one way:

* ``target_model`` — the target read once, as ``init`` reads it: its LlmAgents, the tools each offers with the
  JSON Schema ADK declares for them, and the profile's roles (analyst, delegate tool and its code argument or the
  delegation key, exit tool).
* ``library`` + ``behaviours.yaml`` — what delegated code does, as data a user extends (``--behaviours``):
  small and huge output, output at and one over the preview limit, raise, FINAL, FINAL_VAR (defined or not), a
  variable defined in one iteration and used in the next, llm_query, llm_query_batched, printing nothing.
* ``strategies`` — Hypothesis strategies from the two: sessions (users, turns, initial ``app:``/``user:``/``temp:``
  keys and None values), max_iterations, and the analyst's answers (plain text, a call of an offered tool with
  arguments drawn from its schema, a delegation, a model fault, an allowed transfer), eight seed conversations tried
  first (``seed_plans``), every choice ordered simplest first so
  shrinking moves toward fewer sessions, turns, steps and simpler code.
* ``plan`` — a drawn conversation (``Plan``) as an ordinary in-memory ``Scenario``; every agent's script is
  padded past what the conversation can use, so the target never runs out of answers.
* ``findings`` — one run judged: a finding per failed registered check (the harness's ``script``, ``cassette``
  and ``snapshot`` rows and ``scenario_expectations`` never are), a harness bug, or a discarded example.
* ``engine`` — rounds of Hypothesis, each finding and shrinking one new failing check, runs cached by plan,
  budgets of examples, time and shrink runs; the same seed gives the same findings.
* ``pool`` — ``-j N``: worker processes running, ahead of the search, the examples it will ask for next (the same
  runs in the same order whatever N is, hence the same findings).
* ``hang`` — ``--example-timeout``: a worker past the limit dumps its threads' stacks and ends; the example is
  ``target_hung``, with where the target was stuck (under a limit examples run in workers, one with ``-j 1``).
* ``writer`` — a finding written as a scenario file (script cut to the steps used, confirmed by a re-run under its
  own name), with a comment naming the check, the seed and the commands.
* ``run`` — one exploration end to end (target read, search, findings written), shared by the CLI and the pytest
  plugin's ``--rlm-explore N`` (harness/pytest_plugin/explore.py).
* ``command`` — the sub-command's arguments and final table.
"""
