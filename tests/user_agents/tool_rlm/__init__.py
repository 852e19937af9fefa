"""A small RLM agent of another layout than ours, written as a user would: no harness import.

The planner delegates by calling a *tool* (run_python) that runs the code in a subprocess, where
llm_query() reaches the model through google-genai's own environment variables; a summarizer agent keeps
notes; a finish tool ends the loop. Its names, keys and artifact ids (uuid4) are all its own.
"""
