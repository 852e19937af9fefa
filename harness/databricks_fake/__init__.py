"""A local Databricks workspace (Files, Jobs 2.2 runs, SQL statements) for hermetic tests of the Databricks backend.

See ``server.py`` for the endpoints and ``faults.py`` for the fault switches.
"""

from .faults import Faults
from .jobs import Submit
from .remote import FakeAddress, RemoteFake
from .replies import NoReply
from .server import DEFAULT_WAREHOUSE, FAKE_TOKEN, FAKE_WORKSPACE_ID, FakeWorkspace

__all__ = ["DEFAULT_WAREHOUSE", "FAKE_TOKEN", "FAKE_WORKSPACE_ID", "FakeAddress", "FakeWorkspace", "Faults",
           "NoReply", "RemoteFake", "Submit"]
