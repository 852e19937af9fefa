"""The reference agent end to end on the Databricks backend: ``build_databricks_services`` on the fake workspace.

The demo conversation (scripted model) delegates twice; the code goes to the
UC volume, Job_B runs as a one-time job run, sessions and artifacts live in
warehouse tables. Nothing but the fake's loopback HTTP is used.
"""

from __future__ import annotations

import json

import pytest
from google.adk.runners import Runner

from reference_agent import state_contract as keys
from reference_agent.app import build_app
from reference_agent.backends.databricks import build_databricks_services
from reference_agent.backends.databricks.polling import Backoff
from reference_agent.cli import DEMO_CONTEXT, DEMO_QUESTION, DEMO_SCRIPT
from reference_agent.config import AgentSettings
from reference_agent.models.scripted import ScriptedLlm
from reference_agent.registry import ArtifactStatus
from reference_agent.run import run_conversation
from reference_agent.sessions.delta_session_service import DeltaSessionService

FAST = Backoff(initial_s=0.02, factor=1.5, max_s=0.1)


@pytest.mark.slow
async def test_demo_conversation_runs_on_the_databricks_backend(settings, client, fake, tmp_path) -> None:
    agent_settings = AgentSettings(home=tmp_path / "home", executor_timeout_s=10.0)
    services = build_databricks_services(agent_settings, settings, sub_lm=None, client=client, hermetic=True,
                                         sql_options={"backoff": FAST},
                                         runner_options={"backoff": FAST, "grace_s": 2.0})
    services.put_context(DEMO_CONTEXT)
    session_service = DeltaSessionService(services.engine)
    app = build_app(services, model=ScriptedLlm.from_script(DEMO_SCRIPT))
    runner = Runner(app=app, session_service=session_service)

    outcome = await run_conversation(runner, user_id="u", session_id="demo", message=DEMO_QUESTION)

    assert outcome.ok and outcome.final_answer == "total 245; best region north" and outcome.delegations == 2
    artifacts = services.registry.list_for_session(agent_settings.app_name, "u", "demo")
    assert [a.status for a in artifacts] == [ArtifactStatus.CONSUMED, ArtifactStatus.CONSUMED]
    assert all(a.code_path.startswith("/Volumes/main/rlm/vol/rlm/artifacts/") for a in artifacts)
    first = json.loads(services.volume.read_text(artifacts[0].result_json_path))
    assert first["stdout"] == "total 245\nby region {'north': 120, 'south': 80, 'east': 45}\n"
    session = await session_service.get_session(app_name=agent_settings.app_name, user_id="u", session_id="demo")
    assert session.state[keys.LAST_RESULT_JSON_PATH] == artifacts[1].result_json_path
    assert sum(1 for _, t in fake.requests if t == "/api/2.2/jobs/runs/submit") == 2
