"""The doctor's look at the project in the working folder: what ``run`` and ``record`` would read there.

Without it the doctor said "ready to record" on a project whose profile misspelled a field or whose target did not
import; ``run`` says so too, but only once it is run. Each error here is the one ``run`` would stop with (it names
the file, the line and the fix), found by the same loaders: the ``[tool.rlm-conformance]`` table, the profile, the
session service it names, the scenarios, the targets they choose. The cassettes a replay needs are a warning: before a first recording there are
none, which is what the doctor is run for.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import HarnessError
from ..project_config import DEFAULTS
from .findings import Finding, error, ok, skipped, warning

CHECK = "project"


def project_findings(start: Path | None = None) -> list[Finding]:
    """Findings about the project that governs ``start`` (default: the working folder)."""
    from ..project_config import load_project_config

    try:
        project = load_project_config(start)
    except HarnessError as exc:
        return [error(CHECK, str(exc), "fix the [tool.rlm-conformance] table of pyproject.toml")]
    here = project.path.parent if project.path is not None else (start or Path.cwd())
    configured = any(getattr(project, name) is not None for name in (
        "target", "profile", "scenarios", "cassettes", "snapshots", "llm_mode", "session_service", "backend"))
    if not configured and not (here / "scenarios").is_dir():
        where = f"in {project.path}" if project.path is not None else "in a pyproject.toml here or above"
        return [skipped(CHECK, f"no [tool.rlm-conformance] table {where} and no ./scenarios folder: nothing of a "
                               f"project to check. `rlm-conformance init --target module:attr` sets one up for "
                               f"your agent.")]
    findings = [ok(CHECK, f"[tool.rlm-conformance] in {project.path}") if configured else
                skipped(CHECK, "no [tool.rlm-conformance] table: run's defaults (./scenarios, ./cassettes, each "
                               "scenario's own target) are checked")]
    profile = None
    if project.profile is not None:
        from ..targets.profile import load_profile

        try:
            profile = load_profile(project.profile)
        except HarnessError as exc:
            return [*findings, error("profile", str(exc), "fix the profile, then run the doctor again")]
        findings.append(ok("profile", f"{project.profile} (target profile {profile.name!r})"))
    if project.session_service is not None:
        from ..targets.plugins import service_on_backend
        from ..targets.session_services import resolve_session_service

        try:  # delta-databricks: delta on the databricks backend, as run resolves it
            resolve_session_service(service_on_backend(project.session_service,
                                                       project.backend or DEFAULTS["backend"]).session_service)
        except HarnessError as exc:
            return [*findings, error("session service", str(exc), "fix session-service in [tool.rlm-conformance]")]
        findings.append(ok("session service", f"{project.session_service} resolves"))
    scenario_dirs = list(project.scenarios or (here / "scenarios",))
    from ..scenario.loader import load_scenarios

    try:
        scenarios = load_scenarios(scenario_dirs)
    except HarnessError as exc:
        return [*findings, error("scenarios", str(exc), "fix the scenario files named above")]
    findings.append(ok("scenarios", f"{len(scenarios)} scenario(s) in {', '.join(map(str, scenario_dirs))}"))
    return findings + _targets_and_cassettes(scenarios, project, profile, project.cassettes or here / DEFAULTS["cassettes"])


def _targets_and_cassettes(scenarios: list, project, profile, cassettes: Path) -> list[Finding]:  # noqa: ANN001
    from ..recording.layout import cassette_dir
    from ..targets.choice import choose_target
    from ..targets.registry import resolve_target

    findings: list[Finding] = []
    missing: list[str] = []
    tried: set[str] = set()  # target specs resolved already
    resolved: list[str] = []  # those that resolve
    for scenario in scenarios:
        try:
            choice = choose_target(scenario, target=project.target, profile=profile, profile_path=project.profile,
                                   profile_is_default=True)  # the project's profile: a scenario's own beats it
        except HarnessError as exc:
            findings.append(error("target", f"scenario {scenario.name!r}: {exc}", "fix the profile it names"))
            continue
        if choice.spec not in tried:
            tried.add(choice.spec)
            try:
                resolve_target(choice.spec)
                resolved.append(choice.spec)
            except HarnessError as exc:
                findings.append(error("target", str(exc), "fix the target's module:attr, or the import error "
                                                          "it raises (run `python -c 'import <module>'`)"))
        if not (cassette_dir(cassettes, choice.name, project.backend or DEFAULTS["backend"]) / f"{scenario.name}.yaml"
                ).is_file():
            missing.append(scenario.name)
    findings += [ok("target", f"{spec} resolves") for spec in resolved]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        findings.append(warning("cassettes", f"{len(missing)} of {len(scenarios)} scenario(s) have no cassette "
                                             f"yet ({shown}): replay fails them until they are recorded",
                                "rlm-conformance record  (scripted model, no key), then rlm-conformance run"))
    elif scenarios:
        findings.append(ok("cassettes", f"every scenario has its cassette ({len(scenarios)})"))
    return findings
