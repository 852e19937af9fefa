"""The reference target's after-every-event artifact status read: fresh after each registry write, free between."""

from __future__ import annotations

from reference_agent.registry import ArtifactRegistry
from reference_agent.storage import DuckDBEngine

from reference_agent.conformance.common import statuses_from_registry


class CountingEngine(DuckDBEngine):
    def __init__(self) -> None:
        super().__init__(None)
        self.selects = 0

    def execute(self, sql, params=None):
        self.selects += sql.lstrip().upper().startswith("SELECT")
        return super().execute(sql, params)


def test_statuses_follow_every_write_and_cost_nothing_in_between():
    engine = CountingEngine()
    registry = ArtifactRegistry(engine)
    read = statuses_from_registry(registry)

    def register(artifact_id: str, session_id: str = "s") -> None:
        registry.register(app_name="app", user_id="u", session_id=session_id, iteration=1,
                          code_path=f"/vol/{artifact_id}.py", artifact_id=artifact_id)

    assert read("app", "u", "s") == {}
    register("a1")
    assert read("app", "u", "s") == {"a1": "pending"}
    before = engine.selects
    for _ in range(5):  # nothing written: no statement
        assert read("app", "u", "s") == {"a1": "pending"}
    assert engine.selects == before
    registry.mark_executed("a1", result_json_path="/vol/r.json")
    assert read("app", "u", "s") == {"a1": "executed"}
    register("b1", session_id="s2")  # another session's write: each session's read stays right
    assert read("app", "u", "s2") == {"b1": "pending"}
    registry.mark_consumed("a1")
    assert read("app", "u", "s") == {"a1": "consumed"}
    returned = read("app", "u", "s")
    returned["a1"] = "tampered"  # a caller's copy: the cache is not theirs to change
    assert read("app", "u", "s") == {"a1": "consumed"}
    engine.close()
