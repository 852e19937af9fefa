"""Which layout a store holds, told from its tables' columns; an unknown one is an error saying what was found."""

from __future__ import annotations

from .base import SqlSource, StoreError
from .layouts import LAYOUTS, Layout

# Every table some layout reads, in a stable order.
TABLES = tuple(dict.fromkeys(table for layout in LAYOUTS for table in layout.required()))


def detect_layout(source: SqlSource) -> Layout:
    found = {table: source.columns(table) for table in TABLES}
    events = found["events"] or ()
    if "actions" in events and "event_data" not in events:
        raise StoreError(f"{source.where}: the events table has ADK's legacy schema v0 (an 'actions' column of "
                         f"pickled EventActions, no 'event_data'), written by ADK 1.19-1.21. The audit reads "
                         f"schema v1 (JSON). Fix: migrate the database with `adk migrate session` (ADK's "
                         f"docs/upgrading_from_1_22_0.md), then audit the migrated copy.")
    for layout in LAYOUTS:
        if all(found[table] is not None and set(columns) <= set(found[table] or ())
               for table, columns in layout.required().items()):
            return layout
    raise StoreError(unrecognised(source.where, found))


def unrecognised(where: str, found: dict[str, tuple[str, ...] | None]) -> str:
    seen = "; ".join(f"{table}({', '.join(columns)})" for table, columns in found.items() if columns is not None)
    lines = [f"{where}: no session-store layout the audit knows. Found: {seen or 'none of the tables ' + ', '.join(TABLES)}."]
    for layout in LAYOUTS:
        missing = [f"{table}.{column}" for table, columns in layout.required().items()
                   for column in columns if column not in (found[table] or ())]
        lines.append(f"  {layout.name} ({layout.title}) expects "
                     + "; ".join(f"{t}({', '.join(c)})" for t, c in layout.required().items())
                     + f" — missing here: {', '.join(missing)}.")
    lines.append("Fix: point STORE at the database (or catalog.schema) your session service writes to.")
    return "\n".join(lines)
