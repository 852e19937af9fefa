"""``python -m harness``: the ``rlm-conformance`` command, for when its script is not on PATH."""

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
