from harness.json_walk import strings_in


def test_every_string_in_document_order_keys_included() -> None:
    value = {"a": ["b", 1, {"c": ("d", None)}], "e": "f", 2.5: True}
    assert list(strings_in(value)) == ["a", "b", "c", "d", "e", "f"]


def test_a_deep_nesting_does_not_reach_the_recursion_limit() -> None:
    deep: list = ["bottom"]
    for _ in range(10_000):
        deep = [deep]
    assert list(strings_in({"k": deep})) == ["k", "bottom"]
