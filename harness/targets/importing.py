"""``package.module:attr`` names, imported the way ``adk run`` and uvicorn do: the user's package is importable
from the folder they run in, and a failure says which module or attribute, with a guess when one is close."""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Any

from ..errors import HarnessError


def import_named(spec: str, *, flag: str, error: type[HarnessError], wanted: str) -> Any:
    """The object ``spec`` names; ``flag`` (e.g. "--target") and ``wanted`` (what to name) go into the errors."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise error(f"{flag} {spec!r}: expected 'package.module:attr' naming {wanted}.")
    # An imported module needs no path (a run's current folder may be its work folder: harness/run/service_folder.py).
    if module_name not in sys.modules and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is the user's to fix; say which module
        raise error(
            f"{flag} {spec!r}: importing module {module_name!r} failed with {type(exc).__name__}: {exc}. "
            f"Check the module path (relative to {os.getcwd()}) and that it imports on its own "
            f"(python -c 'import {module_name}')."
        ) from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(obj) if not n.startswith("_"))
            guess = difflib.get_close_matches(part, public, n=1)
            hint = f" Did you mean {module_name}:{guess[0]}?" if guess else ""
            raise error(f"{flag} {spec!r}: module {module_name!r} has no attribute {attr!r}.{hint} "
                        f"Name {wanted} defined in it.")
        obj = getattr(obj, part)
    return obj
