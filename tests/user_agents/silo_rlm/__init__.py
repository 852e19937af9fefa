"""An RLM agent shaped like the seeds' upstream one, written as a user would (no harness import): the analyst's
string instruction reads ``{silo}``, a key the team's app sets before the first turn, and code runs through a
tool. Its planted defect — a BaseAgent that marks the turn done by mutating ``session.state`` without an event —
is only reached by a turn that gets past the prompt (issue 51: explore must get past that first wall)."""
