"""Benchmarks of the conformance suite, the session store, the state budget and the executor: ``python -m bench``."""
