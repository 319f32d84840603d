"""Stub rendering: how an operation's schemas become a Python stub a model can call.

Every rendering rule of the discovery issue has one test here, named after the rule,
plus a golden-file test of a nested, recursive, union-typed pydantic schema
(``tests/golden/nested_recursive_union.pyi``; rewrite it with ``UPDATE_GOLDEN=1``).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from mycelium import Module, operation
from mycelium.discovery import Catalog
from mycelium.graph import build_graph
from mycelium.stubs import MAX_DEPTH, StubRenderer

GOLDEN = Path(__file__).parent / "golden"
TYPING_PRELUDE = "from typing import Any, Literal, TypedDict, NotRequired\n"


def _op(
    input: Any = None,
    output: Any = None,
    *,
    description: str | None = None,
    access: Literal["read", "write"] | None = "read",
    confirm: bool = False,
) -> Any:
    return operation(
        input=input, output=output, execute=lambda: None, description=description, access=access, confirm=confirm
    )


def render(operations: dict[str, Any]) -> str:
    """Every stub of one module ``t`` (unbounded: the renderer itself, not the bounded describe)."""
    graph = build_graph([Module(id="t", name="t", operations=operations)], revision=1)
    return StubRenderer().render(graph.operations())


def render_one(input: Any = None, output: Any = None, **labels: Any) -> str:
    return render({"op": _op(input, output, **labels)})


def signature(text: str, name: str = "op") -> str:
    """The ``async def`` line of operation ``name``."""
    found = re.search(rf"^async def {name}\(.*$", text, re.MULTILINE)
    assert found, text
    return found.group(0)


def declaration(text: str, name: str) -> str:
    """The ``class name(TypedDict)`` block (or functional form line) declaring ``name``."""
    found = re.search(rf"^(class {name}\(TypedDict\):\n(?:    .*\n)*|{name} = TypedDict\(.*\n)", text, re.MULTILINE)
    assert found, f"{name} is not declared in:\n{text}"
    return found.group(0)


def field_schema(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], **extra}


# --- Parameters, output, docstring ---------------------------------------------------------


def test_parameters_are_keyword_only_required_first_defaults_shown_and_optional_without_default_as_ellipsis() -> None:
    schema = field_schema(
        {
            "tag": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "query": {"type": "string"},
            "exact": {"type": "boolean", "default": False},
            "folder": {"type": "string", "default": "inbox"},
            "day": {"type": "string"},
        },
        required=["query", "day"],
    )
    assert signature(render_one(schema)) == (
        "async def op(*, query: str, day: str, tag: str = ..., limit: int = 10, exact: bool = False, "
        "folder: str = 'inbox') -> Any:"
    )


def test_the_output_type_is_the_return_annotation() -> None:
    class Note(BaseModel):
        id: int
        title: str

    text = render({"listed": _op(output=list[Note]), "counted": _op(output=int), "untyped": _op()})
    assert signature(text, "listed").endswith(") -> list[Note]:")
    assert signature(text, "counted").endswith(") -> int:")
    assert signature(text, "untyped").endswith(") -> Any:")
    assert declaration(text, "Note") == "class Note(TypedDict):\n    id: int\n    title: str\n"


def test_the_docstring_holds_the_description_the_field_descriptions_and_the_access_labels() -> None:
    schema = field_schema(
        {"to": {"type": "string", "description": "Who receives it."}, "body": {"type": "string"}}, required=["to"]
    )
    text = render(
        {
            "send": _op(schema, description="Send a message.\n\nIt leaves at once.", access="write", confirm=True),
            "peek": _op(description="Look at the inbox.", access="read"),
            "touch": _op(access=None),
        }
    )
    assert (
        '# t.send\nasync def send(*, to: str, body: str = ...) -> Any:\n    """Send a message.\n\n'
        "    It leaves at once.\n\n    to: Who receives it.\n\n    Access: write; a person confirms each call.\n"
        '    """\n'
    ) in text
    assert '    """Look at the inbox.\n\n    Access: read.\n    """\n' in text
    assert 'async def touch() -> Any:\n    """Access: write.\n    """\n' in text


# --- Types ----------------------------------------------------------------------------------


def test_nested_objects_are_typeddicts_declared_above_the_stub_with_notrequired_for_optional_keys() -> None:
    address = field_schema(
        {"city": {"type": "string", "description": "City name."}, "zip": {"type": "string"}},
        required=["city"],
        title="Address",
        description="Where to deliver.",
    )
    text = render_one(field_schema({"address": address}, required=["address"]))
    assert declaration(text, "Address") == (
        "class Address(TypedDict):\n"
        '    """Where to deliver."""\n'
        "    city: str  # City name.\n"
        "    zip: NotRequired[str]\n"
    )
    assert text.index("class Address(TypedDict)") < text.index("async def op(")
    assert signature(text) == "async def op(*, address: Address) -> Any:"


def test_refs_into_defs_resolve_to_the_named_declared_type() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": field_schema({"x": {"type": "number"}, "y": {"type": "number"}}, required=["x", "y"])},
        "properties": {"start": {"$ref": "#/$defs/Point"}, "end": {"$ref": "#/$defs/Point"}},
        "required": ["start", "end"],
    }
    text = render_one(schema, {"$ref": "#/$defs/Point", "$defs": schema["$defs"]})
    assert signature(text) == "async def op(*, start: Point, end: Point) -> Point:"
    assert declaration(text, "Point") == "class Point(TypedDict):\n    x: float\n    y: float\n"


def test_anyof_and_oneof_render_as_unions() -> None:
    schema = field_schema(
        {
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "one": {"oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}]},
        },
        required=["either", "one"],
    )
    assert signature(render_one(schema)) == "async def op(*, either: str | int, one: bool | list[str]) -> Any:"


def test_allof_parts_are_merged_into_one_typed_dict() -> None:
    schema = {
        "type": "object",
        "$defs": {"Base": field_schema({"id": {"type": "integer"}}, required=["id"])},
        "properties": {
            "patch": {
                "allOf": [
                    {"$ref": "#/$defs/Base"},
                    field_schema({"note": {"type": "string"}, "pinned": {"type": "boolean"}}, required=["pinned"]),
                ]
            }
        },
        "required": ["patch"],
    }
    text = render_one(schema)
    name = re.search(r"patch: (\w+)\)", signature(text))
    assert name, text
    assert declaration(text, name.group(1)).splitlines()[1:] == [
        "    id: int",
        "    note: NotRequired[str]",
        "    pinned: bool",
    ]
    # A single-part allOf (pydantic's way to attach a description to a $ref) is just that part.
    single = {**schema, "properties": {"patch": {"allOf": [{"$ref": "#/$defs/Base"}], "description": "d"}}}
    assert signature(render_one(single)) == "async def op(*, patch: Base) -> Any:"


def test_enum_and_const_render_as_literal() -> None:
    schema = field_schema(
        {
            "color": {"enum": ["red", "green", 3, None]},
            "kind": {"const": "circle"},
            "level": {"type": "integer", "enum": [1, 2]},
        },
        required=["color", "kind", "level"],
    )
    assert signature(render_one(schema)) == (
        "async def op(*, color: Literal['red', 'green', 3, None], kind: Literal['circle'], "
        "level: Literal[1, 2]) -> Any:"
    )


def test_nullable_types_render_as_x_or_none() -> None:
    schema = field_schema(
        {
            "listed": {"type": ["string", "null"]},
            "any_of": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
        },
        required=["listed", "any_of"],
    )
    assert signature(render_one(schema)) == "async def op(*, listed: str | None, any_of: int | None) -> Any:"

    class Model(BaseModel):
        maybe: float | None

    assert signature(render_one(Model)) == "async def op(*, maybe: float | None) -> Any:"


def test_arrays_render_as_list_of_their_item_type() -> None:
    schema = field_schema(
        {
            "tags": {"type": "array", "items": {"type": "string"}},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "loose": {"type": "array"},
        },
        required=["tags", "grid", "loose"],
    )
    assert (
        signature(render_one(schema))
        == "async def op(*, tags: list[str], grid: list[list[int]], loose: list[Any]) -> Any:"
    )


def test_prefix_items_render_as_a_tuple() -> None:
    class Model(BaseModel):
        pair: tuple[int, str]
        box: tuple[float, float, float, float]

    assert signature(render_one(Model)) == (
        "async def op(*, pair: tuple[int, str], box: tuple[float, float, float, float]) -> Any:"
    )


def test_additional_properties_schema_renders_as_a_dict_of_its_type() -> None:
    class Note(BaseModel):
        title: str

    class Model(BaseModel):
        counts: dict[str, int]
        notes: dict[str, Note]

    text = render_one(Model, {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"}}})
    assert (
        signature(text) == "async def op(*, counts: dict[str, int], notes: dict[str, Note]) -> dict[str, list[float]]:"
    )
    assert "class Note(TypedDict):" in text


def test_a_self_referencing_ref_renders_the_type_name_without_looping() -> None:
    class Node(BaseModel):
        value: int
        next: Node | None = None
        children: list[Node] = []

    text = render_one(Node, Node)
    assert text.count("class Node(TypedDict):") == 1
    assert declaration(text, "Node") == (
        "class Node(TypedDict):\n"
        "    value: int\n"
        "    next: NotRequired[Node | None]\n"
        "    children: NotRequired[list[Node]]\n"
    )
    assert (
        signature(text) == "async def op(*, value: int, next: Node | None = None, children: list[Node] = []) -> Node:"
    )


def test_nesting_past_the_depth_limit_renders_any_and_terminates() -> None:
    schema: dict[str, Any] = field_schema({"leaf": {"type": "string"}})
    for level in reversed(range(30)):
        schema = field_schema({"child": schema}, title=f"Level{level}")
    text = render_one(field_schema({"root": schema}, required=["root"]))
    declared = re.findall(r"^class (Level\d+)\(TypedDict\):", text, re.MULTILINE)
    assert declared == [f"Level{level}" for level in range(len(declared))]
    assert 1 <= len(declared) <= MAX_DEPTH
    assert declaration(text, declared[-1]) == f"class {declared[-1]}(TypedDict):\n    child: NotRequired[Any]\n"
    assert "leaf" not in text


def test_different_types_with_the_same_title_get_different_names_and_one_type_used_twice_is_declared_once() -> None:
    class Item(BaseModel):
        sku: str

    other_item = field_schema({"label": {"type": "string"}}, required=["label"], title="Item")
    text = render(
        {
            "buy": _op(output=list[Item]),
            "sell": _op(field_schema({"item": other_item}, required=["item"]), output=Item),
            "keep": _op(output=dict[str, Item]),
        }
    )
    assert declaration(text, "Item") == "class Item(TypedDict):\n    sku: str\n"
    assert declaration(text, "Item2") == "class Item2(TypedDict):\n    label: str\n"
    assert text.count("(TypedDict):") == 2
    assert signature(text, "buy").endswith("-> list[Item]:")
    assert signature(text, "sell") == "async def sell(*, item: Item2) -> Item:"
    assert signature(text, "keep").endswith("-> dict[str, Item]:")


def test_types_that_look_alike_but_refer_to_different_defs_are_not_merged() -> None:
    """Two operations whose ``Wrapper`` schemas are the same text, but whose ``#/$defs/Node`` differ.

    Each ``Wrapper`` is a different type (its ``n`` means a different ``Node``), so the
    two may not share a declaration, and both ``Node`` types must be declared.
    """

    def wrapped(node_properties: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "$defs": {
                "Node": field_schema(node_properties, required=list(node_properties), title="Node"),
                "Wrapper": field_schema({"n": {"$ref": "#/$defs/Node"}}, required=["n"], title="Wrapper"),
            },
            "properties": {"w": {"$ref": "#/$defs/Wrapper"}},
            "required": ["w"],
        }

    text = render({"a": _op(wrapped({"x": {"type": "integer"}})), "b": _op(wrapped({"y": {"type": "string"}}))})
    assert "    x: int\n" in text
    assert "    y: str\n" in text, f"operation b's Node (y: str) is never declared:\n{text}"
    assert signature(text, "a") != signature(text, "b").replace("async def b", "async def a")


def test_keys_that_are_not_identifiers_use_the_functional_typeddict_form() -> None:
    headers = field_schema(
        {"content-type": {"type": "string"}, "class": {"type": "integer"}}, required=["content-type"], title="Headers"
    )
    text = render_one(field_schema({"headers": headers}, required=["headers"]))
    assert declaration(text, "Headers") == (
        'Headers = TypedDict("Headers", {"content-type": str, "class": NotRequired[int]})\n'
    )
    assert signature(text) == "async def op(*, headers: Headers) -> Any:"
    # When the input's own keys are not identifiers, the whole input is one positional mapping.
    top = render_one(field_schema({"x-api-key": {"type": "string"}}, required=["x-api-key"]))
    assert signature(top) == "async def op(input: OpInput, /) -> Any:"
    assert declaration(top, "OpInput") == 'OpInput = TypedDict("OpInput", {"x-api-key": str})\n'


def test_an_input_that_is_not_an_object_renders_as_one_positional_parameter() -> None:
    assert signature(render_one(list[int])) == "async def op(input: list[int], /) -> Any:"
    assert signature(render_one({"type": "string"})) == "async def op(input: str, /) -> Any:"
    assert signature(render_one()) == "async def op() -> Any:"


# --- Validity -------------------------------------------------------------------------------


def _every_rule_catalog() -> dict[str, Any]:
    class Node(BaseModel):
        value: int
        children: list[Node] = []

    class Model(BaseModel):
        pair: tuple[int, str]
        counts: dict[str, int]
        maybe: float | None = None
        mode: Literal["a", "b"] = "a"
        node: Node

    deep: dict[str, Any] = field_schema({"leaf": {"type": "string"}})
    for _ in range(30):
        deep = field_schema({"child": deep})
    return {
        "model": _op(Model, list[Node], description="Every pydantic shape.", access="write", confirm=True),
        "odd_keys": _op(field_schema({"a-b": {"type": "integer"}, "from": {"type": "string"}})),
        "nested_odd": _op(field_schema({"h": field_schema({"content-type": {"type": "string"}}, title="H")})),
        "listed": _op(list[int], {"type": ["string", "null"]}),
        "deep": _op(field_schema({"root": deep})),
        "enum": _op(field_schema({"e": {"enum": ["x", 1, None, True]}, "c": {"const": {"k": [1]}}})),
        "empty": _op(),
    }


@pytest.mark.parametrize(
    "operations",
    [
        pytest.param(_every_rule_catalog(), id="every-rule"),
        pytest.param({"op": _op(description='Say """hi""" twice.')}, id="triple-quotes-in-description"),
        pytest.param({"op": _op(description="Match C:\\xff or \\N here.")}, id="backslash-escapes-in-description"),
        pytest.param(
            {
                "op": _op(
                    field_schema({"o": field_schema({"k": {"type": "integer"}}, title="O", description='a "quote"')})
                )
            },
            id="type-description-ending-in-a-quote",
        ),
        pytest.param(
            {"op": _op(field_schema({"false": field_schema({"k": {"type": "integer"}})}))},
            id="property-named-like-a-keyword-when-capitalised",
        ),
    ],
)
def test_the_rendered_stub_text_is_valid_python_syntax(operations: dict[str, Any]) -> None:
    text = render(operations)
    ast.parse(TYPING_PRELUDE + text)
    described = Catalog(build_graph([Module(id="t", name="t", operations=operations)], revision=1)).describe("t")
    ast.parse(TYPING_PRELUDE + described)


# --- Golden file ----------------------------------------------------------------------------


class Circle(BaseModel):
    """A circle centred on its node."""

    kind: Literal["circle"]
    radius: float = Field(description="Radius in pixels.")


class Square(BaseModel):
    """An axis-aligned square centred on its node."""

    kind: Literal["square"]
    side: float = Field(description="Side length in pixels.")


class Tree(BaseModel):
    """A labelled tree; each node may carry a shape."""

    label: str
    shape: Annotated[Circle | Square, Field(discriminator="kind")] | None = None
    children: list[Tree] = Field(default_factory=list, description="Sub-trees, drawn left to right.")


class DrawInput(BaseModel):
    tree: Tree = Field(description="The root of the tree to draw.")
    style: Literal["outline", "filled"] = "outline"
    scale: float | None = Field(default=None, description="Zoom factor; None fits the canvas.")
    layer: str | None = None


class DrawResult(BaseModel):
    drawn: int = Field(description="How many nodes were drawn.")
    bounds: tuple[float, float, float, float]
    warnings: list[str]


def test_golden_stub_of_a_nested_recursive_union_typed_schema() -> None:
    canvas = Module(
        id="canvas-app",
        name="canvas",
        namespace=["apps"],
        operations={
            "shapes.draw": operation(
                input=DrawInput,
                output=DrawResult,
                execute=lambda _: None,
                access="write",
                confirm=True,
                description="Draw a tree of shapes on the canvas.\n\n"
                "Nothing is erased first; draw onto an empty layer to start clean.",
            )
        },
    )
    described = Catalog(build_graph([canvas], revision=1)).describe("apps.canvas.shapes.draw")
    golden = GOLDEN / "nested_recursive_union.pyi"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(described, encoding="utf-8")
    assert described == golden.read_text(encoding="utf-8")
    ast.parse(TYPING_PRELUDE + described)
