"""``python -m reference_agent.executor``: see ``main.py``."""

import os
import sys

from .main import main

if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: threads the analyst's code left running must not keep Job_B alive after its result is written.
    os._exit(code)
