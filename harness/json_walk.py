"""Every string in a JSON-like value: what the result's secret scrub and the history-scope check both read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def strings_in(value: Any) -> Iterator[str]:
    """Every string in ``value`` (dicts, lists and tuples of strings and scalars), mapping keys included, in
    document order (a key before its value). Iterative: a deeply nested state does not reach the recursion limit."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append(child)
                stack.append(key)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
