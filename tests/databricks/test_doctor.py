"""``rlm-conformance doctor --databricks`` against the fake workspace: healthy, then one fault at a time.

Every fault is a change on ``FakeWorkspace.objects`` (harness/databricks_fake/workspace_objects.py) or on the
settings; each test asserts which check fails, that its fix names the variable / GRANT / setting to change, and
that the exit code is non-zero exactly when a finding is an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.databricks_fake import FakeWorkspace
from harness.databricks_fake.workspace_objects import DEFAULT_CLUSTER, FAKE_USER, Securable
from harness.doctor import DoctorReport, Level
from reference_agent.conformance.doctor.run import run_databricks_doctor
from reference_agent.conformance.doctor.runtimes import dbr_python, serverless_python
from reference_agent.backends.databricks.config import DatabricksSettings, make_workspace_client

ROOT = Path(__file__).resolve().parents[2]
SECRET = "{{secrets/rlm/google_api_key}}"


def doctor(fake: FakeWorkspace, *, write_probe: bool = False, **changes: Any) -> DoctorReport:
    base = DatabricksSettings(host=fake.host, token=fake.token, warehouse_id="fakewarehouse0001", catalog="main",
                              schema="rlm", volume="vol", cluster_id=DEFAULT_CLUSTER,
                              genai_secret="rlm/google_api_key")
    settings = base.with_overrides(**changes)
    client = make_workspace_client(settings, hermetic=True) if settings.host and settings.token else None
    return run_databricks_doctor(settings=settings, client=client, write_probe=write_probe)


def only(report: DoctorReport, check: str, level: Level) -> str:
    """The message + fix of ``check``'s single finding at ``level``."""
    found = [f for f in report.findings if f.check == check and f.level is level]
    assert len(found) == 1, [(f.check, f.level.value, f.message) for f in report.findings]
    return f"{found[0].message} || {found[0].fix}"


def levels(report: DoctorReport) -> dict[str, str]:
    return {check: report.level_of(check).value for check in dict.fromkeys(f.check for f in report.findings)}


@pytest.fixture
def healthy(fake: FakeWorkspace) -> FakeWorkspace:
    fake.objects.clusters[DEFAULT_CLUSTER].spark_env_vars["GOOGLE_API_KEY"] = SECRET
    return fake


# --- healthy -------------------------------------------------------------------------------------------------------


def test_healthy_workspace_passes_every_check(healthy: FakeWorkspace) -> None:
    report = doctor(healthy, write_probe=True)
    assert report.exit_code == 0
    expected = {name: "ok" for name in (
        "configuration", "identity", "warehouse", "warehouse permission", "catalog", "schema", "tables", "volume",
        "volume write probe", "compute", "compute runtime", "compute access mode", "compute permission",
        "Job_B payload", "genai secret")}
    assert levels(report) == {**expected, "llm_query key exposure": "warning"}  # the key on the compute: what it reaches
    assert "Python 3.11" in only(report, "compute runtime", Level.OK)
    probe = only(report, "volume write probe", Level.OK)
    assert "wrote and deleted /Volumes/main/rlm/vol/rlm/_rlm/doctor-probe-" in probe
    assert not list(healthy.local_path("/Volumes/main/rlm/vol/rlm/_rlm/x").parent.glob("*")), "the probe cleans up"


def test_the_doctor_only_reads_unless_asked_to_probe(healthy: FakeWorkspace) -> None:
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "--write-probe" in only(report, "volume write probe", Level.SKIPPED)
    writes = [(m, p) for m, p in healthy.requests if m not in ("GET", "HEAD")]
    assert writes == []


# --- configuration and identity ------------------------------------------------------------------------------------


def test_incomplete_configuration_names_every_missing_variable() -> None:
    report = run_databricks_doctor(env={})
    assert report.exit_code == 1
    text = only(report, "configuration", Level.ERROR)
    for variable in ("DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID", "RLM_DATABRICKS_CATALOG",
                     "RLM_DATABRICKS_SCHEMA", "RLM_DATABRICKS_VOLUME", "RLM_DATABRICKS_CLUSTER_ID"):
        assert variable in text
    assert report.level_of("workspace checks") is Level.SKIPPED


def test_partly_configured_runs_what_it_can(healthy: FakeWorkspace) -> None:
    report = doctor(healthy, warehouse_id=None, cluster_id=None)
    assert report.exit_code == 1
    assert "DATABRICKS_WAREHOUSE_ID" in only(report, "configuration", Level.ERROR)
    assert report.level_of("warehouse") is Level.SKIPPED and report.level_of("compute") is Level.SKIPPED
    assert report.level_of("volume") is Level.OK  # the volume needs no warehouse


def test_expired_token_names_the_token_fix(healthy: FakeWorkspace) -> None:
    healthy.faults.expired_token = True
    report = doctor(healthy)
    assert report.exit_code == 1
    text = only(report, "identity", Level.ERROR)
    assert "401" in text and "DATABRICKS_TOKEN" in text and "databricks auth login" in text
    assert report.level_of("warehouse") is None and report.level_of("workspace checks") is Level.SKIPPED


@pytest.mark.slow
def test_unreachable_host_names_databricks_host(tmp_path: Path) -> None:
    settings = DatabricksSettings(host="http://127.0.0.1:9", token="dapi" + "0" * 32, warehouse_id="w",
                                  catalog="main", schema="rlm", volume="vol", serverless=True, retry_timeout_s=1)
    report = run_databricks_doctor(settings=settings, client=make_workspace_client(settings, hermetic=True))
    assert report.exit_code == 1
    assert "DATABRICKS_HOST" in only(report, "identity", Level.ERROR)


# --- warehouse -----------------------------------------------------------------------------------------------------


def test_missing_warehouse(healthy: FakeWorkspace) -> None:
    report = doctor(healthy, warehouse_id="nosuchwarehouse")
    assert report.exit_code == 1
    assert "DATABRICKS_WAREHOUSE_ID" in only(report, "warehouse", Level.ERROR)


@pytest.mark.parametrize("state", ["DELETED", "DELETING"])
def test_deleted_warehouse_is_an_error(healthy: FakeWorkspace, state: str) -> None:
    healthy.objects.warehouses["fakewarehouse0001"].state = state
    report = doctor(healthy)
    assert report.exit_code == 1
    assert state in only(report, "warehouse", Level.ERROR)


@pytest.mark.parametrize("state", ["STOPPED", "STARTING"])
def test_stopped_warehouse_is_a_warning(healthy: FakeWorkspace, state: str) -> None:
    healthy.objects.warehouses["fakewarehouse0001"].state = state
    report = doctor(healthy)
    assert report.exit_code == 0
    text = only(report, "warehouse", Level.WARNING)
    assert "first statement starts it" in text and "RLM_DATABRICKS_SQL_TIMEOUT_S" in text


def test_warehouse_without_can_use(healthy: FakeWorkspace) -> None:
    healthy.objects.acls[("warehouses", "fakewarehouse0001")] = {FAKE_USER: "CAN_MONITOR"}
    report = doctor(healthy)
    assert report.exit_code == 1
    text = only(report, "warehouse permission", Level.ERROR)
    assert "CAN_MONITOR" in text and "CAN USE" in text


def test_group_permission_and_unreadable_acls(healthy: FakeWorkspace) -> None:
    healthy.objects.groups.append("analysts")
    healthy.objects.acls[("warehouses", "fakewarehouse0001")] = {"analysts": "CAN_USE"}
    assert doctor(healthy).level_of("warehouse permission") is Level.OK
    healthy.objects.acls_readable = False
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "CAN MANAGE" in only(report, "warehouse permission", Level.WARNING)


# --- Unity Catalog ---------------------------------------------------------------------------------------------------


def test_missing_catalog_skips_what_is_below_it(healthy: FakeWorkspace) -> None:
    del healthy.objects.catalogs["main"]
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "RLM_DATABRICKS_CATALOG" in only(report, "catalog", Level.ERROR)
    assert {report.level_of(c) for c in ("schema", "tables", "volume", "volume write probe")} == {Level.SKIPPED}


def test_missing_schema(healthy: FakeWorkspace) -> None:
    del healthy.objects.schemas["main.rlm"]
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "RLM_DATABRICKS_SCHEMA" in only(report, "schema", Level.ERROR)
    assert report.level_of("volume") is Level.SKIPPED


def test_missing_volume(healthy: FakeWorkspace) -> None:
    del healthy.objects.volumes["main.rlm.vol"]
    report = doctor(healthy, write_probe=True)
    assert report.exit_code == 1
    assert "CREATE VOLUME `main`.`rlm`.`vol`" in only(report, "volume", Level.ERROR)
    assert report.level_of("volume write probe") is Level.SKIPPED


@pytest.mark.parametrize(("kind", "name", "privilege", "check", "grant"), [
    ("catalog", "main", "USE_CATALOG", "catalog", "GRANT USE CATALOG ON CATALOG `main` TO `user@example.com`;"),
    ("schema", "main.rlm", "USE_SCHEMA", "schema", "GRANT USE SCHEMA ON SCHEMA `main`.`rlm` TO `user@example.com`;"),
    ("schema", "main.rlm", "CREATE_TABLE", "tables",
     "GRANT CREATE TABLE ON SCHEMA `main`.`rlm` TO `user@example.com`;"),
    ("volume", "main.rlm.vol", "READ_VOLUME", "volume",
     "GRANT READ VOLUME ON VOLUME `main`.`rlm`.`vol` TO `user@example.com`;"),
    ("volume", "main.rlm.vol", "WRITE_VOLUME", "volume",
     "GRANT WRITE VOLUME ON VOLUME `main`.`rlm`.`vol` TO `user@example.com`;"),
])
def test_each_missing_privilege_names_its_grant(healthy: FakeWorkspace, kind: str, name: str, privilege: str,
                                                 check: str, grant: str) -> None:
    healthy.objects.securables(kind)[name].grants[FAKE_USER].discard(privilege)
    report = doctor(healthy)
    assert report.exit_code == 1
    assert only(report, check, Level.ERROR).endswith(grant)
    others = {c: lvl for c, lvl in levels(report).items() if lvl == "error"}
    if privilege == "WRITE_VOLUME":  # the payload upload needs it too
        assert others == {"volume": "error", "Job_B payload": "error"}
    else:
        assert others == {check: "error"}


def test_privileges_granted_to_a_group_or_inherited_count(healthy: FakeWorkspace) -> None:
    objects = healthy.objects
    objects.volumes["main.rlm.vol"].grants = {}
    objects.schemas["main.rlm"].grants = {"account users": {"USE_SCHEMA", "CREATE_TABLE"}}
    objects.catalogs["main"].grants[FAKE_USER] |= {"READ_VOLUME", "WRITE_VOLUME"}  # inherited by the volume
    report = doctor(healthy)
    assert report.exit_code == 0, levels(report)


def test_existing_tables_need_select_and_modify(healthy: FakeWorkspace) -> None:
    objects = healthy.objects
    objects.schemas["main.rlm"].grants[FAKE_USER].discard("CREATE_TABLE")
    tables = ("sessions", "events", "app_state_keys", "user_state_keys", "app_states", "user_states", "artifacts")
    for table in tables:
        objects.tables[f"main.rlm.{table}"] = Securable(owner="someone@example.com")
    objects.tables["main.rlm.events"].grants[FAKE_USER] = {"SELECT"}
    report = doctor(healthy)
    assert report.exit_code == 1
    errors = [f for f in report.findings if f.check == "tables"]
    assert len(errors) == len(tables)
    events = next(f for f in errors if "main.rlm.events" in f.message)
    assert events.fix == "GRANT MODIFY ON TABLE `main`.`rlm`.`events` TO `user@example.com`;"
    objects.schemas["main.rlm"].grants[FAKE_USER] |= {"SELECT", "MODIFY"}  # on the schema: every table inherits
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "exist, readable and writable" in only(report, "tables", Level.OK)


def test_write_probe_without_write_volume_fails_and_writes_nothing(healthy: FakeWorkspace) -> None:
    healthy.objects.volumes["main.rlm.vol"].grants[FAKE_USER].discard("WRITE_VOLUME")
    report = doctor(healthy, write_probe=True)
    assert "GRANT WRITE VOLUME" in only(report, "volume write probe", Level.ERROR)
    assert not healthy.local_path("/Volumes/main/rlm/vol/rlm/_rlm/x").parent.exists()


# --- compute -------------------------------------------------------------------------------------------------------


def test_missing_cluster(healthy: FakeWorkspace) -> None:
    report = doctor(healthy, cluster_id="0000-000000-nosuchcluster")
    assert report.exit_code == 1
    assert "RLM_DATABRICKS_CLUSTER_ID" in only(report, "compute", Level.ERROR)
    assert report.level_of("Job_B payload") is Level.WARNING  # the Python is unknown without a cluster


def test_python_39_runtime_is_outside_the_payload_range(healthy: FakeWorkspace) -> None:
    healthy.objects.clusters[DEFAULT_CLUSTER].spark_version = "12.2.x-scala2.12"
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "DBR 12.2 LTS: Python 3.9" in only(report, "compute runtime", Level.OK)
    text = only(report, "Job_B payload", Level.ERROR)
    assert "Python 3.9" in text and "3.10–3.12" in text and "LTS" in text


def test_unknown_runtime_is_a_warning(healthy: FakeWorkspace) -> None:
    healthy.objects.clusters[DEFAULT_CLUSTER].spark_version = "19.1.x-scala2.13"
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "not a runtime this doctor knows" in only(report, "compute runtime", Level.WARNING)
    assert "unknown" in only(report, "Job_B payload", Level.WARNING)


@pytest.mark.parametrize("mode", ["NONE", "LEGACY_TABLE_ACL"])
def test_access_modes_without_unity_catalog_are_errors(healthy: FakeWorkspace, mode: str) -> None:
    healthy.objects.clusters[DEFAULT_CLUSTER].data_security_mode = mode
    report = doctor(healthy)
    assert report.exit_code == 1
    text = only(report, "compute access mode", Level.ERROR)
    assert "Unity Catalog" in text and "SINGLE_USER" in text


def test_standard_access_mode_is_ok(healthy: FakeWorkspace) -> None:
    cluster = healthy.objects.clusters[DEFAULT_CLUSTER]
    cluster.data_security_mode, cluster.single_user_name = "USER_ISOLATION", None
    assert doctor(healthy).level_of("compute access mode") is Level.OK


def test_cluster_dedicated_to_someone_else(healthy: FakeWorkspace) -> None:
    healthy.objects.clusters[DEFAULT_CLUSTER].single_user_name = "colleague@example.com"
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "dedicated to colleague@example.com" in only(report, "compute access mode", Level.ERROR)


def test_terminated_cluster_and_attach_only(healthy: FakeWorkspace) -> None:
    healthy.objects.clusters[DEFAULT_CLUSTER].state = "TERMINATED"
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "first run waits" in only(report, "compute", Level.WARNING)
    healthy.objects.acls[("clusters", DEFAULT_CLUSTER)] = {FAKE_USER: "CAN_ATTACH_TO"}
    report = doctor(healthy)
    assert report.exit_code == 0
    assert "cannot start it" in only(report, "compute permission", Level.WARNING)
    healthy.objects.acls[("clusters", DEFAULT_CLUSTER)] = {}
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "CAN ATTACH TO" in only(report, "compute permission", Level.ERROR)


@pytest.mark.parametrize(("version", "python"), [("1", "3.10"), ("2", "3.11"), ("3", "3.12"), ("4", "3.12")])
def test_serverless_environment_versions(healthy: FakeWorkspace, version: str, python: str) -> None:
    report = doctor(healthy, cluster_id=None, serverless=True, environment_version=version)
    assert f"Python {python}" in only(report, "compute runtime", Level.OK)
    assert "not probed" in only(report, "compute", Level.OK)
    # the backend passes no environment variable to serverless compute: the key does not reach llm_query
    assert "serverless" in only(report, "genai secret", Level.WARNING)
    assert report.exit_code == 0


def test_unknown_serverless_environment_version(healthy: FakeWorkspace) -> None:
    report = doctor(healthy, cluster_id=None, serverless=True, environment_version="9")
    assert "RLM_DATABRICKS_ENVIRONMENT_VERSION" in only(report, "compute runtime", Level.WARNING)


def test_new_cluster_spec(healthy: FakeWorkspace) -> None:
    spec = {"spark_version": "16.4.x-scala2.12", "node_type_id": "i3.xlarge", "num_workers": 0,
            "data_security_mode": "SINGLE_USER", "single_user_name": FAKE_USER}
    report = doctor(healthy, cluster_id=None, new_cluster=spec)
    assert report.exit_code == 0
    assert "DBR 16.4 LTS: Python 3.12" in only(report, "compute runtime", Level.OK)
    report = doctor(healthy, cluster_id=None, new_cluster={**spec, "data_security_mode": "NONE"})
    assert report.exit_code == 1 and report.level_of("compute access mode") is Level.ERROR
    del spec["data_security_mode"]
    report = doctor(healthy, cluster_id=None, new_cluster=spec)
    assert "data_security_mode" in only(report, "compute access mode", Level.WARNING)
    report = doctor(healthy, cluster_id=None, new_cluster={"num_workers": 0})
    assert "spark_version" in only(report, "compute", Level.ERROR)


def test_dbr_and_serverless_python_tables() -> None:
    assert {v: dbr_python(f"{v}.x-scala2.12") for v in ("13.3", "14.3", "15.4", "16.4", "17.3")} == {
        "13.3": (3, 10), "14.3": (3, 10), "15.4": (3, 11), "16.4": (3, 12), "17.3": (3, 12)}
    assert dbr_python("12.2.x-scala2.12") == (3, 9)
    assert dbr_python("15.4.x-cpu-ml-scala2.12") == (3, 11)
    assert dbr_python("15.5.x-scala2.12") is None and dbr_python("custom:image") is None
    assert serverless_python("2") == (3, 11) and serverless_python("5") is None


# --- Job_B payload -------------------------------------------------------------------------------------------------


def test_override_wheel_must_exist_in_the_volume(healthy: FakeWorkspace) -> None:
    wheel = "/Volumes/main/rlm/vol/wheels/mine-1.0-py3-none-any.whl"
    report = doctor(healthy, wheel=wheel)
    assert report.exit_code == 1
    text = only(report, "Job_B payload", Level.ERROR)
    assert wheel in text and "RLM_DATABRICKS_WHEEL" in text
    local = healthy.local_path(wheel)
    local.parent.mkdir(parents=True)
    local.write_bytes(b"PK")
    report = doctor(healthy, wheel=wheel)
    assert report.exit_code == 0
    assert "exists" in only(report, "Job_B payload", Level.OK)


def test_built_payload_goes_to_the_volume(healthy: FakeWorkspace) -> None:
    from reference_agent.backends.databricks.payload import build_payload_wheel

    text = only(doctor(healthy), "Job_B payload", Level.OK)
    # The path the job runner uploads to: the doctor asks the runner's payload module, not a copy of its rule.
    assert build_payload_wheel().volume_path("/Volumes/main/rlm/vol/rlm") in text and "first run" in text


# --- llm_query's secret --------------------------------------------------------------------------------------------


def test_missing_secret_scope(healthy: FakeWorkspace) -> None:
    del healthy.objects.secret_scopes["rlm"]
    report = doctor(healthy)
    assert report.exit_code == 1
    assert "databricks secrets create-scope rlm" in only(report, "genai secret", Level.ERROR)


def test_missing_key_and_unreadable_scope(healthy: FakeWorkspace) -> None:
    healthy.objects.secret_scopes["rlm"].keys = {"other"}
    assert "put-secret rlm google_api_key" in only(doctor(healthy), "genai secret", Level.ERROR)
    healthy.objects.secret_scopes["rlm"].readers = set()
    assert "put-acl rlm user@example.com READ" in only(doctor(healthy), "genai secret", Level.ERROR)


def test_secret_not_reaching_an_existing_cluster(fake: FakeWorkspace) -> None:
    report = doctor(fake)  # the cluster's Spark environment does not name the secret
    assert report.exit_code == 0
    assert SECRET in only(report, "genai secret", Level.WARNING)


def test_no_secret_configured(fake: FakeWorkspace) -> None:
    report = doctor(fake, genai_secret=None)
    assert report.exit_code == 0
    assert "RLM_DATABRICKS_GENAI_SECRET" in only(report, "genai secret", Level.WARNING)
    assert report.level_of("llm_query key exposure") is None  # no key, nothing exposed


# --- output and CLI ------------------------------------------------------------------------------------------------


def _cli(fake: FakeWorkspace, *args: str) -> subprocess.CompletedProcess[str]:
    """``rlm-conformance doctor ARGS`` with the workspace's settings in the environment, in this process (the
    command's own code is what is under test; a subprocess would add ~2.5 s of imports per call)."""
    import contextlib
    import io

    from harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name in [k for k in os.environ if k.startswith(("DATABRICKS_", "RLM_DATABRICKS_"))]:
            patch.delenv(name)
        for name, value in dict(DATABRICKS_HOST=fake.host, DATABRICKS_TOKEN=fake.token,
                                DATABRICKS_CONFIG_FILE=os.devnull, DATABRICKS_WAREHOUSE_ID="fakewarehouse0001",
                                RLM_DATABRICKS_CATALOG="main", RLM_DATABRICKS_SCHEMA="rlm", RLM_DATABRICKS_VOLUME="vol",
                                RLM_DATABRICKS_CLUSTER_ID=DEFAULT_CLUSTER,
                                RLM_DATABRICKS_GENAI_SECRET="rlm/google_api_key").items():
            patch.setenv(name, value)
        patch.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["doctor", *args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["rlm-conformance", "doctor", *args], code, out.getvalue(), err.getvalue())


def test_cli_json_and_exit_codes(healthy: FakeWorkspace) -> None:
    done = _cli(healthy, "--databricks", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["exit_code"] == 0 and data["counts"]["error"] == 0
    assert {"check", "level", "message", "fix"} <= set(data["findings"][0])
    assert healthy.token not in done.stdout

    healthy.objects.warehouses["fakewarehouse0001"].state = "DELETED"
    done = _cli(healthy, "--databricks", "--json", "--databricks-catalog", "nosuchcatalog")  # a flag wins
    assert done.returncode == 1
    failed = {f["check"] for f in json.loads(done.stdout)["findings"] if f["level"] == "error"}
    assert failed == {"warehouse", "catalog"}


def test_cli_table_and_usage(healthy: FakeWorkspace) -> None:
    done = _cli(healthy, "--databricks")
    assert done.returncode == 0, done.stderr
    assert "ready to record" in done.stdout and "compute access mode" in done.stdout
    healthy.faults.expired_token = True
    done = _cli(healthy, "--databricks")
    assert done.returncode == 1 and "a recording would fail" in done.stdout
    done = _cli(healthy, "--write-probe")
    assert done.returncode == 2 and "--databricks" in done.stderr
    done = _cli(healthy)
    assert done.returncode == 0 and "--databricks" in done.stdout


def test_without_the_sdk_the_local_doctor_runs_and_databricks_names_the_extra() -> None:
    without_sdk = "import sys; sys.modules['databricks'] = None; from harness.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", without_sdk, "doctor", "--json"], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sdk = next(f for f in json.loads(done.stdout)["findings"] if f["check"] == "databricks-sdk")
    assert sdk["level"] == "warning" and "rlm-conformance[databricks]" in sdk["fix"]
    done = subprocess.run([sys.executable, "-c", without_sdk, "doctor", "--databricks"], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=120)
    assert done.returncode == 2 and "pip install 'rlm-conformance[databricks]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_effective_privileges_readable_only_for_oneself(healthy: FakeWorkspace) -> None:
    healthy.objects.effective_permissions_self_only = True
    report = doctor(healthy)
    assert report.exit_code == 0, levels(report)
    assert any("principal=user%40example.com" in p or "principal=user@example.com" in p
               for _, p in healthy.requests if "effective-permissions" in p)
    healthy.objects.schemas["main.rlm"].grants[FAKE_USER].discard("USE_SCHEMA")
    report = doctor(healthy)
    assert report.exit_code == 1 and report.level_of("schema") is Level.ERROR
    assert report.level_of("tables") is Level.SKIPPED
