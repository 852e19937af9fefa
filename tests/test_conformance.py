"""Every scenario in scenarios/ as a test of the default ``pytest`` run (ids: ``test_scenario[<name>]``).

The rlm-conformance plugin parametrizes ``rlm_scenario`` over the scenarios and runs each once;
``assert_conforms`` fails on any failed check and compares the normalized trace with
``snapshots/<scenario>.json`` (``--snapshot-update`` writes it).
"""

from harness.pytest_plugin import assert_conforms


def test_scenario(rlm_scenario_result, snapshot):
    assert_conforms(rlm_scenario_result, snapshot)
