"""FINAL / FINAL_VAR marker rules (model text and code text)."""

from __future__ import annotations

import pytest

from reference_agent.executor.final import (
    FinalMarker,
    find_final_answer,
    find_final_calls,
    has_final_call,
    strip_fenced_blocks,
)

# One ADK line runs this module: it imports nothing pinned differently on the two (tests/line_guard).
pytestmark = pytest.mark.line_independent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FINAL(42)", FinalMarker("FINAL", "42")),
        ("Done.\n  FINAL(the answer is 7)  \n", FinalMarker("FINAL", "the answer is 7")),
        ("FINAL_VAR(result)", FinalMarker("FINAL_VAR", "result")),
        ("FINAL_VAR( 'result' )", FinalMarker("FINAL_VAR", "result")),
        ('FINAL_VAR("result")', FinalMarker("FINAL_VAR", "result")),
        # Greedy within the line: nested parentheses, and a ')' inside the answer, survive.
        ("FINAL(len([1, (2, 3)]))", FinalMarker("FINAL", "len([1, (2, 3)])")),
        ('FINAL("a ) b")', FinalMarker("FINAL", '"a ) b"')),
        # FINAL_VAR wins over FINAL, as in the reference implementation.
        ("FINAL(1)\nFINAL_VAR(x)", FinalMarker("FINAL_VAR", "x")),
        # An answer spanning lines.
        ("FINAL(line one\nline two (b))\n", FinalMarker("FINAL", "line one\nline two (b)")),
        # Trailing prose that ends with ')' is not swallowed.
        ("FINAL(42)\nas computed above (see step 2)", FinalMarker("FINAL", "42")),
    ],
)
def test_markers_found(text: str, expected: FinalMarker) -> None:
    assert find_final_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The answer is FINAL(3)",
        "I will call FINAL_VAR(x) later",
        "```python\nFINAL(3)\n```",
        "```repl\nx = 1\nFINAL_VAR(x)\n```\nNo answer yet.",
        "```\nunclosed fence\nFINAL(3)",
        "no marker at all",
        "FINAL(",
    ],
)
def test_markers_not_found(text: str) -> None:
    assert find_final_answer(text) is None


def test_marker_after_a_fence_is_found() -> None:
    text = "```repl\nFINAL(inside)\n```\nFINAL(outside)"
    assert find_final_answer(text) == FinalMarker("FINAL", "outside")


def test_strip_fenced_blocks_keeps_line_count() -> None:
    text = "a\n```\nb\n```\nc"
    assert strip_fenced_blocks(text) == "a\n\n\n\nc"


def test_code_calls_found_in_source_order() -> None:
    code = "x = 3\nif x:\n    FINAL(x * (2 + 1))\nFINAL_VAR('x')\n"
    assert find_final_calls(code) == [FinalMarker("FINAL", "x * (2 + 1)"), FinalMarker("FINAL_VAR", "x")]
    assert has_final_call(code)


@pytest.mark.parametrize(
    "code",
    [
        'print("FINAL(x)")',
        's = "FINAL_VAR(answer)"',
        'doc = """\nFINAL(42)\n"""',
        "# FINAL(42)\nx = 1",
        "obj.FINAL(1)",  # an attribute, not the REPL's FINAL
        "x = (\n",  # does not parse: nothing will run, so no call
    ],
)
def test_code_text_without_a_call(code: str) -> None:
    assert find_final_calls(code) == []
    assert not has_final_call(code)
