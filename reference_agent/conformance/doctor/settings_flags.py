"""The Databricks backend's ``--databricks-*`` flags on a parser (the module declaring them needs databricks-sdk)."""

from __future__ import annotations

import argparse


def add_databricks_flags(parser: argparse.ArgumentParser) -> None:
    from reference_agent.backends.databricks.config import add_cli_arguments

    add_cli_arguments(parser)
