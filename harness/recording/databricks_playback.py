"""Replaying a workspace cassette: vcrpy's lookup indexed by path, a matcher that parses no REST body, and the
cassette's ``metadata.databricks`` block.

vcrpy's internals are used where its public API has no hook (``Cassette._responses``); each patch is left
out when they differ, so a vcrpy upgrade costs speed, never an answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .databricks import LINKS_HOST, PUBLIC_HOST

if TYPE_CHECKING:
    from vcr.cassette import Cassette

_WORKSPACE_HOST = urlsplit(PUBLIC_HOST).hostname
_LINKS_HOST = urlsplit(LINKS_HOST).hostname


def recorded_settings(cassette: Cassette) -> dict[str, Any]:
    """The ``metadata.databricks`` block of a cassette being replayed ({} when it has none)."""
    from vcr.errors import MissingMetadataError

    try:
        block = cassette.get_metadata("databricks", {})
    except MissingMetadataError:
        return {}
    return block if isinstance(block, dict) else {}


def index_playback(cassette: Cassette) -> None:
    """Replay in O(calls x same-path calls) instead of O(calls x interactions).

    vcrpy looks for a request's response by running every matcher on every recorded interaction, from the
    first, for each request (twice: ``in`` and ``play_response``); a databricks cassette holds hundreds of
    SQL statements, which made that the bulk of a replay. This looks only at unplayed interactions with the
    request's method and path, in recorded order, with the same matchers. Playback repeats are never allowed
    here, so skipping played interactions changes no answer. Left alone if vcrpy's internals differ.
    """
    from vcr.matchers import requests_match

    data, match_on = getattr(cassette, "data", None), getattr(cassette, "_match_on", None)
    if data is None or match_on is None or not hasattr(cassette, "_responses") or cassette.allow_playback_repeats:
        return
    buckets: dict[tuple[str, str], list[int]] = {}
    for index, (stored, _) in enumerate(data):
        buckets.setdefault((stored.method.upper(), stored.path), []).append(index)
    prepare = cassette._before_record_request

    def responses(request: Any) -> Iterator[tuple[int, Any]]:
        request = prepare(request)
        for index in buckets.get((request.method.upper(), request.path), ()):
            if cassette.play_counts[index]:
                continue
            stored, response = data[index]
            if requests_match(request, stored, match_on):
                yield index, response

    cassette._responses = responses


def workspace_aware_caller(r1: Any, r2: Any, *, caller: Any) -> None:
    """The ``rlm_caller`` matcher, cheap for workspace calls: a REST call's method and path say who calls.

    vcrpy runs every matcher on every recorded interaction; parsing two JSON bodies per pair made replay of
    a workspace cassette (hundreds of SQL statements) quadratic in body parsing.
    """
    if r1.path != r2.path or r1.method.upper() != r2.method.upper():
        raise AssertionError(f"{r1.method} {r1.path} != {r2.method} {r2.path}")
    if r1.host in (_WORKSPACE_HOST, _LINKS_HOST):  # the workspace, or its result links
        return
    caller(r1, r2)
