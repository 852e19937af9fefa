"""Record and replay: the cassettes of a run's HTTP traffic (vcrpy) and where every recording lives.

Kept apart as vcrpy keeps them: ``filters`` (what a request and a response become before a cassette holds them:
the loopback rewrite and secret scrubbing, ``secret_patterns``), ``matchers`` (which recording answers a
request), ``persister`` (provenance, validation, atomic writes), ``recorder`` (the ``vcr.VCR`` put together),
``misses`` (what replay could not answer, in words), ``identity`` (what a cassette is for), ``drift`` (a replayed
request that differs from its recording), ``scrub_outputs`` (secrets out of results and logs too). Databricks
traffic: ``databricks`` (a workspace's values as placeholders) and ``databricks_playback`` (fast replay).
``layout`` says where a target's cassettes and snapshots live and the command that records them again.
"""
