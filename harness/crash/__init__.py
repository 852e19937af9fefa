"""``crash``: a scenario killed with SIGKILL at each of its crash points, recovered in a fresh process, and judged.

A first, uncrashed run of the scenario names the points (``points.py``): after each event the target's session
service appended, and before each (the harness's own wrapper of the service, just before it asks the store to
write). For each point the scenario runs in a child process on a kept work folder (``child.py``); its
``CrashJournal`` (``journal.py``) writes, flushed and fsynced, what the client observed (each acknowledged append,
each scripted model step served) and kills the process at the point. A fresh process then recovers as the
target's profile says (``recovery.py``: the crashed turn's message again, or the next one), the model script
continuing where the crash left it, and reads the store first. ``checks.py`` judges the combined history
(journal, store as the crash left it, recovery trace); ``matrix.py`` runs it all for one scenario. Where a backend's
plugin hands the matrix its workspace (``workspace.py``: the databricks fake), the matrix's own process keeps it
across the killed run and its recovery, kills the run at a job submit too (``submitted`` points), and the
workspace's ledger of job runs is evidence.
"""
