"""``package.module:attr`` names, imported the way ``adk run`` and uvicorn do: the user's package is importable
from the folder they run in, and a failure says which module or attribute, with a guess when one is close."""

from __future__ import annotations

import difflib
import inspect
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
            defined = _defined_here(obj)
            guess = difflib.get_close_matches(part, defined, n=1)
            hint = (f" Did you mean {module_name}:{guess[0]}?" if guess else
                    f" It defines: {', '.join(defined[:8])}." if defined else "")
            raise error(f"{flag} {spec!r}: module {module_name!r} has no attribute {attr!r}.{hint} "
                        f"Name {wanted} defined in it.")
        obj = getattr(obj, part)
    return obj


def _defined_here(namespace: Any) -> list[str]:
    """The public names a module (or object) holds that could be what was meant: objects and functions made there,
    not the classes and modules it imported (``LoopAgent`` is no agent; ``loop = LoopAgent(...)`` is)."""
    own = getattr(namespace, "__name__", None)
    found = []
    for name in sorted(n for n in dir(namespace) if not n.startswith("_")):
        value = getattr(namespace, name, None)
        if inspect.ismodule(value) or inspect.isclass(value) or isinstance(value, (str, bytes, int, float)) \
                or type(value).__module__ in ("typing", "__future__", "typing_extensions", "collections.abc"):
            continue
        if inspect.isfunction(value) and value.__module__ != own:
            continue
        found.append(name)
    return found
