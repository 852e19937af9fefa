"""``rlm-agent``: run the reference agent on the embedded defaults.

``rlm-agent demo`` needs nothing but this machine: a scripted model, the local
executor, a DuckDB file and a volume folder under ``--home``. ``rlm-agent ask``
uses ADK's Gemini model and the environment's key (opt-in, needs the network).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path

from . import state_contract as keys
from .config import AgentSettings
from .models.scripted import Reply
from .run import RunOutcome, run_conversation

DEMO_CONTEXT = {"sales": [{"region": "north", "amount": 120}, {"region": "south", "amount": 80},
                          {"region": "east", "amount": 45}]}
DEMO_QUESTION = "What is the total sales amount, and which region sells most?"
DEMO_SCRIPT = {
    keys.ANALYST: [
        Reply(call="delegate_code_results", args={
            "code": "totals = {}\nfor row in context['sales']:\n    totals[row['region']] = "
                    "totals.get(row['region'], 0) + row['amount']\nprint('total', sum(totals.values()))\n"
                    "print('by region', totals)",
            "instruction": "Report the total and the best region.",
        }),
        Reply(call="delegate_code_results", args={
            "code": "best = max(context['sales'], key=lambda r: r['amount'])\n"
                    "FINAL(f\"total 245; best region {best['region']}\")",
            "instruction": "Confirm the final answer.",
        }),
    ],
    keys.RESULTS_PROCESSOR: [
        Reply(text="Total sales are 245; north leads with 120."),
        Reply(text="Final answer given: total 245, best region north."),
    ],
}


def _print_outcome(outcome: RunOutcome, settings: AgentSettings, result_path: str | None, volume_root: Path) -> None:
    print(f"termination:   {outcome.termination}")
    print(f"final answer:  {outcome.final_answer if outcome.final_answer is not None else '(none)'}")
    print(f"delegations:   {outcome.delegations}")
    if outcome.error:
        print(f"error:         {outcome.error}")
    print(f"session:       {settings.database_path} (DuckDB; app={settings.app_name}, session={outcome.session_id})")
    print(f"artifacts:     {volume_root / 'artifacts'}")
    if result_path:
        print(f"last result:   {volume_root / result_path}")


async def _demo(home: Path) -> int:
    from .testing import build_local_stack

    settings = AgentSettings(home=home)
    stack = build_local_stack(home, script=DEMO_SCRIPT, context=DEMO_CONTEXT, settings=settings)
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    print(f"question:      {DEMO_QUESTION}")
    outcome = await run_conversation(stack.runner, user_id="demo_user", session_id=session_id, message=DEMO_QUESTION)
    session = await stack.session_service.get_session(app_name=settings.app_name, user_id="demo_user",
                                                      session_id=session_id)
    _print_outcome(outcome, settings, session.state.get(keys.LAST_RESULT_JSON_PATH) if session else None,
                   settings.volume_root)
    return 0 if outcome.ok else 1


async def _ask(question: str, session_id: str, user_id: str) -> int:
    from google.adk.runners import Runner

    from . import agent as configured  # builds the App from the environment (Gemini)
    from .sessions.delta_session_service import DeltaSessionService

    runner = Runner(app=configured.app, session_service=DeltaSessionService(configured.services.engine))
    outcome = await run_conversation(runner, user_id=user_id, session_id=session_id, message=question)
    _print_outcome(outcome, configured.settings, None, configured.settings.volume_root)
    return 0 if outcome.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlm-agent", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the agent end to end offline (scripted model, local executor, DuckDB)")
    demo.add_argument("--home", type=Path, default=Path(".rlm"),
                      help="folder for the DuckDB file and the volume (default .rlm). DuckDB lets one process use a "
                           "file at a time: give runs that overlap their own --home (RLM_HOME for ask)")
    ask = sub.add_parser("ask", help="ask a question with live Gemini (needs GOOGLE_API_KEY and the network)")
    ask.add_argument("question")
    ask.add_argument("--session", default=f"cli-{uuid.uuid4().hex[:8]}")
    ask.add_argument("--user", default="cli_user")
    args = parser.parse_args(argv)
    from .backends.confinement import ConfinementUnavailable
    from .storage import DatabaseLockedError

    try:
        if args.command == "demo":
            return asyncio.run(_demo(args.home))
        return asyncio.run(_ask(args.question, args.session, args.user))
    except (DatabaseLockedError, ConfinementUnavailable) as exc:  # the message says what to do, no traceback
        print(f"rlm-agent: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
