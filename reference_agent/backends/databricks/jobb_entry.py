"""Job_B on Databricks: the file a ``spark_python_task`` runs (uploaded to the volume as text).

Databricks runs it inside an already running Python interpreter (the source is
exec'd, IPython-style): ``__file__`` is not defined, the task's parameters are
in ``sys.argv[1:]``, and a SystemExit with a nonzero code fails the task. So
this file only hands ``sys.argv[1:]`` (``--artifact-path /Volumes/... --run-id
... --iteration ... [--context-path ...] [--namespace-path ...] [--lm-direct
MODEL]``) to the supervisor of the payload wheel ``rlm_jobb``, which the job
runner declared as the task's library; the supervisor takes the model key out of
this process's environment, runs the executor as a child process without it
(``supervisor.py``, ``credential.py``) and writes the result JSON beside the
artifact (the volume is mounted at ``/Volumes`` on the compute). It never calls
``os._exit``: that would end the platform's interpreter; only the child does.
"""

import sys

try:
    from rlm_jobb.supervisor import main as _supervise
except ModuleNotFoundError as _missing:
    raise ModuleNotFoundError(
        f"Job_B cannot start: the payload package rlm_jobb is not installed on this compute ({_missing}). The job "
        "runner declares its wheel (/Volumes/.../_rlm/wheels/<digest>/rlm_jobb-<version>-py3-none-any.whl) as the "
        "task's library; check that the library installed (the run's Libraries tab), and if RLM_DATABRICKS_WHEEL is "
        "set, that it names a payload wheel (python -m reference_agent.backends.databricks.payload builds one).",
        name="rlm_jobb",
    ) from None

_code = _supervise(sys.argv[1:])
if _code:
    raise SystemExit(_code)
