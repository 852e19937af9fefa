"""Test material teams already have, turned into scenarios: ADK eval sets (``import evalset``)."""
