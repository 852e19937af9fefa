"""Values every run makes afresh (UUIDs, hex ids, temporary paths), masked wherever two runs are compared.

A replayed request is compared with its recording (harness/recording/drift.py) and a sub-LM call is matched to its
recording by its prompt (harness/recording/matchers.py); an id the agent generated must not make either differ.
"""

from __future__ import annotations

import re

FRESH_VALUES = (
    (re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"), "<uuid>"),
    # Hex runs of 8+ with at least one digit, also inside identifiers (art_3f9c01d2e4, run-0a1b2c3d): a word
    # boundary would miss them after '_'.
    (re.compile(r"(?<![0-9A-Za-z])(?=[a-f]*[0-9])[0-9a-f]{8,}(?![0-9A-Za-z])"), "<hex>"),
    # A run's private folder (pytest's tmp_path, tempfile.mkdtemp) up to the next quote, space or backslash.
    (re.compile(r"(?:/tmp|/var/folders|/private/var)/[^\s\"'\\]*"), "<tmp>"),
)


def mask_fresh_values(text: str) -> str:
    for pattern, mask in FRESH_VALUES:
        text = pattern.sub(mask, text)
    return text
