"""The project folder the CLI tests run in: one scenario, ``cli_smoke``, scripted for the reference agent."""

SCENARIO = """\
name: cli_smoke
description: One delegation, executed, summarised, then the analyst exits the loop.
tags: [smoke, cli]
context: {sales: [{region: north, amount: 120}, {region: south, amount: 80}]}
sessions:
  - user: analyst_1
    turns:
      - user: What is the total sales amount?
script:
  databricks_analyst:
    - call: delegate_code_results
      args:
        code: "print(sum(r['amount'] for r in context['sales']))"
        instruction: Report the total.
    - call: exit_loop
  results_processor:
    - text: "The total sales amount is 200."
expect:
  executions: 1
  termination: exit_loop
"""
