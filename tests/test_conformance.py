"""Every scenario in scenarios/ as a test of the default ``pytest`` run (ids: ``test_scenario[<name>]``).

The rlm-conformance plugin parametrizes ``rlm_scenario`` over the scenarios and runs each once;
``assert_conforms`` fails on any failed check and compares the normalized trace with
``snapshots/<scenario>.json`` (``--snapshot-update`` writes it).

Every scenario of this repository states what it expects (tests/harness/test_reference_passes.py checks the
files), so its ``scenario_expectations`` must have been compared here, not found not applicable.
"""

from harness.checks import Status
from harness.pytest_plugin import assert_conforms


def test_scenario(rlm_scenario_result, snapshot):
    assert_conforms(rlm_scenario_result, snapshot)
    expectations = next(c for c in rlm_scenario_result.checks if c.name == "scenario_expectations")
    assert expectations.status is Status.PASS, expectations.explanation
