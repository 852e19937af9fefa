"""DatabricksSettings from env and flags, the error for each missing piece, and the hermetic SDK client."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from reference_agent.backends.databricks import build_databricks_services
from reference_agent.backends.databricks.config import (
    DatabricksSettings,
    add_cli_arguments,
    make_workspace_client,
    workspace_config_kwargs,
)
from reference_agent.backends.databricks.errors import DatabricksConfigError
from reference_agent.config import AgentSettings

FULL_ENV = {
    "DATABRICKS_HOST": "https://example.cloud.databricks.com",
    "DATABRICKS_TOKEN": "dapi" + "ab" * 16,
    "DATABRICKS_WAREHOUSE_ID": "wh1",
    "RLM_DATABRICKS_CATALOG": "main",
    "RLM_DATABRICKS_SCHEMA": "rlm",
    "RLM_DATABRICKS_VOLUME": "vol",
    "RLM_DATABRICKS_CLUSTER_ID": "0101-abc",
}


def error_for(settings: DatabricksSettings, *parts: str, hermetic: bool = False) -> str:
    with pytest.raises(DatabricksConfigError) as info:
        settings.require(*parts, hermetic=hermetic)
    return str(info.value)


def test_from_env_reads_every_variable_and_flags_win(tmp_path) -> None:
    spec = tmp_path / "cluster.json"
    spec.write_text(json.dumps({"spark_version": "15.4.x-scala2.12", "num_workers": 0}))
    env = {**FULL_ENV, "RLM_DATABRICKS_CLUSTER_ID": "", "RLM_DATABRICKS_NEW_CLUSTER": f"@{spec}",
           "RLM_DATABRICKS_SQL_TIMEOUT_S": "42"}
    settings = DatabricksSettings.from_env(env)
    assert (settings.host, settings.warehouse_id, settings.catalog, settings.schema, settings.volume) == (
        "https://example.cloud.databricks.com", "wh1", "main", "rlm", "vol")
    assert settings.new_cluster == {"spark_version": "15.4.x-scala2.12", "num_workers": 0}
    assert settings.compute_kind == "new_cluster" and settings.sql_timeout_s == 42.0
    assert settings.volume_root == "/Volumes/main/rlm/vol/rlm"
    assert "dapi" not in repr(settings)  # the token stays out of reprs and logs
    settings.require("workspace", "sql", "volume", "jobs")

    parser = argparse.ArgumentParser()
    add_cli_arguments(parser)
    args = parser.parse_args(["--databricks-warehouse-id", "wh2", "--databricks-serverless",
                              "--databricks-new-cluster", ""])
    flagged = DatabricksSettings.from_env({**FULL_ENV, "RLM_DATABRICKS_CLUSTER_ID": ""}, args)
    assert flagged.warehouse_id == "wh2" and flagged.compute_kind == "serverless"


def test_each_missing_piece_names_its_variable() -> None:
    message = error_for(DatabricksSettings(), "sql", "volume", "jobs")
    for name in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CONFIG_PROFILE", "DATABRICKS_WAREHOUSE_ID",
                 "RLM_DATABRICKS_CATALOG", "RLM_DATABRICKS_SCHEMA", "RLM_DATABRICKS_VOLUME",
                 "RLM_DATABRICKS_CLUSTER_ID", "RLM_DATABRICKS_NEW_CLUSTER", "RLM_DATABRICKS_SERVERLESS"):
        assert name in message, name
    full = DatabricksSettings.from_env(FULL_ENV)
    assert "DATABRICKS_WAREHOUSE_ID" in error_for(full.with_overrides(warehouse_id=None), "sql")
    assert "RLM_DATABRICKS_VOLUME is not set" in error_for(full.with_overrides(volume=None), "volume")
    assert "DATABRICKS_TOKEN is not set" in error_for(full.with_overrides(token=None, profile="dev"), hermetic=True)
    full.with_overrides(token=None, profile="dev").require("workspace")  # a profile is enough off-hermetic
    both = error_for(full.with_overrides(serverless=True), "jobs")
    assert "more than one Job_B compute" in both and "existing_cluster, serverless" in both
    assert "must start with https://" in error_for(full.with_overrides(host="example.com"))


def test_malformed_values_name_their_variable() -> None:
    with pytest.raises(DatabricksConfigError, match="RLM_DATABRICKS_NEW_CLUSTER is not valid JSON"):
        DatabricksSettings.from_env({"RLM_DATABRICKS_NEW_CLUSTER": "{nope"})
    with pytest.raises(DatabricksConfigError, match="RLM_DATABRICKS_SERVERLESS='maybe' is not a boolean"):
        DatabricksSettings.from_env({"RLM_DATABRICKS_SERVERLESS": "maybe"})
    with pytest.raises(DatabricksConfigError, match="RLM_DATABRICKS_SQL_TIMEOUT_S"):
        DatabricksSettings.from_env({"RLM_DATABRICKS_SQL_TIMEOUT_S": "soon"})


def test_services_refuse_to_start_before_any_request() -> None:
    with pytest.raises(DatabricksConfigError, match="DATABRICKS_WAREHOUSE_ID"):
        no_warehouse = DatabricksSettings.from_env({**FULL_ENV, "DATABRICKS_WAREHOUSE_ID": ""})
        build_databricks_services(AgentSettings(), no_warehouse, sub_lm=None,
                                  make_client=lambda *a, **k: pytest.fail("no client before validation"))


def test_hermetic_client_ignores_databricks_env_and_config_file(fake, monkeypatch, tmp_path) -> None:
    cfg = tmp_path / "databrickscfg"
    cfg.write_text("[DEFAULT]\nhost = https://wrong.cloud.databricks.com\ntoken = dapiwrong\n")
    for name, value in {"DATABRICKS_HOST": "https://wrong.cloud.databricks.com", "DATABRICKS_TOKEN": "dapiwrong",
                        "DATABRICKS_CONFIG_PROFILE": "missing-profile", "DATABRICKS_CONFIG_FILE": str(cfg),
                        "DATABRICKS_CLIENT_ID": "sp", "DATABRICKS_CLIENT_SECRET": "s3cret",
                        "DATABRICKS_AUTH_TYPE": "oauth-m2m", "GOOGLE_CREDENTIALS": "{}", "ARM_USE_MSI": "true",
                        "HOME": str(tmp_path)}.items():
        monkeypatch.setenv(name, value)
    settings = DatabricksSettings(host=fake.host, token=fake.token)
    kwargs = workspace_config_kwargs(settings, hermetic=True)
    assert (kwargs["auth_type"], kwargs["config_file"]) == ("pat", os.devnull)
    client = make_workspace_client(settings, hermetic=True)
    config = client.config
    assert (config.host, config.token, config.auth_type) == (fake.host, fake.token, "pat")
    assert not config.profile and not config.client_id
    # The SDK's host-metadata probe reached the fake, and a real call authenticates with the given token.
    assert ("GET", "/.well-known/databricks-config") in fake.requests
    from reference_agent.backends.databricks.volume import UcVolumeStore

    assert UcVolumeStore(client, "/Volumes/c/s/v").exists("/Volumes/c/s/v/none.txt") is False
