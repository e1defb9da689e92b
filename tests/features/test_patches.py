"""JSON Patch (RFC 6902) as service/features/patches.py applies it: the RFC's own examples,
its error cases as 400s naming the operation, and for any document and any operations either a
result or a ValidationError, never another exception, and never a change to the input."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.errors import ValidationError
from service.features import domain, patches
from service.features.patches import Operation


def ops(raw: list[dict[str, Any]]) -> list[Operation]:
    return msgspec.convert(raw, list[Operation])


def applied(document: Any, raw: list[dict[str, Any]]) -> Any:
    return patches.apply(document, ops(raw))


def refused(document: Any, raw: list[dict[str, Any]]) -> str:
    with pytest.raises(ValidationError) as caught:
        applied(document, raw)
    return caught.value.message


# --- RFC 6902, appendix A -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "raw", "result"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        ({"a/b": 1}, [{"op": "copy", "from": "/a~1b", "path": "/c"}], {"a/b": 1, "c": 1}),
        ([1, 2], [{"op": "replace", "path": "", "value": {"whole": True}}], {"whole": True}),
        ({"q": {"bar": 2}}, [{"op": "add", "path": "/q/bar", "value": 3}], {"q": {"bar": 3}}),
    ],
)
def test_the_examples_of_rfc_6902(document: Any, raw: list[dict[str, Any]], result: Any) -> None:
    assert applied(document, raw) == result


@pytest.mark.parametrize(
    ("document", "raw", "message"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz/bat", "value": "qux"}],
            "The path does not exist in the document - at `$[0].path`",
        ),
        (
            {"baz": "qux"},
            [{"op": "test", "path": "/baz", "value": "bar"}],
            "The value at `/baz` differs - at `$[0]`",
        ),
        (
            {"/": 9, "~1": 10},
            [{"op": "test", "path": "/~01", "value": "10"}],
            "The value at `/~01` differs - at `$[0]`",
        ),
        (
            {"a": 1},
            [{"op": "remove", "path": "/b"}],
            "The path does not exist in the document - at `$[0]`",
        ),
        (
            {"a": 1},
            [{"op": "replace", "path": "/b", "value": 2}],
            "The path does not exist in the document - at `$[0]`",
        ),
        (
            [1],
            [{"op": "add", "path": "/2", "value": 2}],
            "The path does not exist in the document - at `$[0].path`",
        ),
        (
            [1],
            [{"op": "add", "path": "/01", "value": 2}],
            "The path does not exist in the document - at `$[0].path`",
        ),
        (
            [1],
            [{"op": "remove", "path": "/-"}],
            "The path does not exist in the document - at `$[0]`",
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "a", "value": 2}],
            "A JSON pointer is empty or starts with `/` - at `$[0].path`",
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "/~2", "value": 2}],
            "`~` in a JSON pointer is `~0` or `~1` - at `$[0].path`",
        ),
        ({"a": 1}, [{"op": "add", "path": "/b"}], "add needs a `value` - at `$[0]`"),
        ({"a": 1}, [{"op": "move", "path": "/b"}], "move needs a `from` - at `$[0]`"),
        (
            {"a": {"b": 1}},
            [{"op": "move", "from": "/a", "path": "/a/c"}],
            "A value cannot be moved into itself - at `$[0].path`",
        ),
        (
            {"a": 1},
            [{"op": "remove", "path": ""}],
            "The whole document cannot be removed - at `$[0]`",
        ),
        (
            {"a": 1},
            [{"op": "test", "path": "/a", "value": True}],
            "The value at `/a` differs - at `$[0]`",
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/c"}],
            "The path does not exist in the document - at `$[1]`",
        ),
    ],
)
def test_what_cannot_apply_is_a_400_naming_the_operation(
    document: Any, raw: list[dict[str, Any]], message: str
) -> None:
    assert refused(document, raw) == message


def test_a_refused_patch_leaves_the_document_and_the_operations_as_they_were() -> None:
    document = {"a": [1, {"b": 2}]}
    raw: list[dict[str, Any]] = [
        {"op": "add", "path": "/a/1/c", "value": {"d": 1}},
        {"op": "remove", "path": "/x"},
    ]
    operations = ops(raw)
    with pytest.raises(ValidationError):
        patches.apply(document, operations)
    assert document == {"a": [1, {"b": 2}]}
    assert patches.apply({"a": [1, {"b": 2}]}, operations[:1]) == {
        "a": [1, {"b": 2, "c": {"d": 1}}]
    }
    assert operations[0].value == {"d": 1}


def test_numbers_are_equal_by_value_but_a_boolean_is_no_number() -> None:
    assert patches.equal(1, 1.0)
    assert patches.equal({"a": [1, None]}, {"a": [1.0, None]})
    assert not patches.equal(True, 1)
    assert not patches.equal(0, False)
    assert not patches.equal("1", 1)
    assert not patches.equal([1], {"0": 1})
    assert not patches.equal(None, False)


# --- any input ---------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)
POINTER = st.one_of(
    st.just(""),
    st.lists(
        st.sampled_from(["a", "b", "0", "1", "-", "01", "~0", "~1", "~", "x/y", ""]), max_size=3
    ).map(lambda parts: "".join("/" + p for p in parts)),
    st.text(max_size=6),
)
OPERATION = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]), "path": POINTER},
    optional={"value": JSON, "from": POINTER},
)


@settings(max_examples=400)
@given(JSON, st.lists(OPERATION, max_size=6))
def test_any_patch_gives_a_document_or_a_400_and_never_changes_its_input(
    document: Any, raw: list[dict[str, Any]]
) -> None:
    before = copy.deepcopy(document)
    operations = ops(raw)
    message = " - at `$["
    try:
        patches.apply(document, operations)
    except ValidationError as exc:
        message = exc.message
    assert " - at `$[" in message
    assert document == before


@given(st.dictionaries(st.text(max_size=4), JSON, max_size=5), st.text(max_size=4), JSON)
def test_adding_then_removing_a_new_member_gives_the_document_back(
    document: dict[str, Any], key: str, value: Any
) -> None:
    if key in document:
        return
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    raw = [
        {"op": "add", "path": pointer, "value": value},
        {"op": "test", "path": pointer, "value": value},
    ]
    raw.append({"op": "remove", "path": pointer})
    assert applied(document, raw) == document


# --- a flag's PATCH ------------------------------------------------------------------------------

FIELDS = domain.FlagFields(description="d", type="release", stale=False, impression_data=False)
FLAG_OPERATION = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
        "path": st.sampled_from(
            ["/description", "/type", "/stale", "/impressionData", "/name", "/variants", "", "/x"]
        ),
    },
    optional={
        "value": JSON | st.sampled_from(["kill-switch", "experiment", "permission"]),
        "from": st.sampled_from(["/description", "/type", "/name", "/stale"]),
    },
)


@settings(max_examples=400)
@given(st.lists(FLAG_OPERATION, max_size=5))
def test_any_patch_of_a_flag_gives_its_events_or_a_400(raw: list[dict[str, Any]]) -> None:
    try:
        events = domain.patch_feature("f", "p", ops(raw), FIELDS)
    except ValidationError:
        return
    assert len(events) <= 2
    assert len({type(e) for e in events}) == len(events)
