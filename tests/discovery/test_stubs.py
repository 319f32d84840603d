"""Stub rendering: how an operation's schemas become a Python stub a model can call.

Every rendering rule of the discovery issue has one test here, named after the rule,
plus a golden-file test of a nested, recursive, union-typed pydantic schema
(``tests/discovery/golden/nested_recursive_union.pyi``; rewrite it with ``UPDATE_GOLDEN=1``).
"""

from __future__ import annotations

import ast
import os
import re
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from uuid import UUID

import pytest
from pydantic import BaseModel, Field

from mycelium import Access, Module, Runtime, operation
from mycelium._access import AccessRefusal, RefusalReason
from mycelium._discovery import Catalog
from mycelium._discovery._stubs import MAX_DEPTH, REFUSAL, StubRenderer, StubsTooLong
from mycelium._graph import build_graph
from mycelium.failures import SyntaxFailure
from mycelium.sandbox.monty import MontySandbox

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
    assert signature(text, "listed").endswith(") -> list[Note] | Refusal:")
    assert signature(text, "counted").endswith(") -> int | Refusal:")
    assert signature(text, "untyped").endswith(") -> Any:")  # Any admits a refusal already
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
    assert signature(text) == "async def op(*, start: Point, end: Point) -> Point | Refusal:"
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
        signature(text)
        == "async def op(*, counts: dict[str, int], notes: dict[str, Note]) -> dict[str, list[float]] | Refusal:"
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
        signature(text)
        == "async def op(*, value: int, next: Node | None = None, children: list[Node] = []) -> Node | Refusal:"
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
    assert text.count("(TypedDict):") == 3  # Item, Item2 and Refusal
    assert signature(text, "buy").endswith("-> list[Item] | Refusal:")
    assert signature(text, "sell") == "async def sell(*, item: Item2) -> Item | Refusal:"
    assert signature(text, "keep").endswith("-> dict[str, Item] | Refusal:")


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
        pytest.param(
            {
                "op": _op(
                    field_schema(
                        {
                            "code": {"type": "string", "pattern": '^"\\N{DIGIT ONE}\\d+"""$', "description": "A code."},
                            "o": field_schema({"k": {"type": "string", "pattern": "\\d+\n#x", "format": "a\nb"}}),
                        }
                    )
                )
            },
            id="constraints-with-quotes-backslashes-and-newlines",
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


# --- Refusals: every return type admits one -------------------------------------------------


def test_every_stub_return_type_admits_the_refusal_shape_declared_once() -> None:
    class Note(BaseModel):
        id: int

    text = render({"a": _op(output=Note), "b": _op(output=list[Note]), "c": _op(output=int | None), "d": _op()})
    assert signature(text, "a").endswith(") -> Note | Refusal:")
    assert signature(text, "b").endswith(") -> list[Note] | Refusal:")
    assert signature(text, "c").endswith(") -> int | None | Refusal:")
    assert signature(text, "d").endswith(") -> Any:")  # Any admits a refusal already
    assert text.count(f"class {REFUSAL}(TypedDict):") == 1
    # A host type that happens to be called Refusal gets a name of its own.
    own = field_schema({"why": {"type": "string"}}, required=["why"], title="Refusal")
    clash = render({"op": _op(output=own)})
    assert signature(clash) == "async def op() -> Refusal2 | Refusal:"
    assert declaration(clash, "Refusal2") == "class Refusal2(TypedDict):\n    why: str\n"


def test_the_refusal_declaration_has_exactly_the_keys_and_reasons_of_a_refused_call() -> None:
    text = render({"op": _op(output=int)})
    block = declaration(text, REFUSAL)
    (declared,) = ast.parse(block).body
    assert isinstance(declared, ast.ClassDef)
    keys = [
        field.target.id
        for field in declared.body
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
    ]
    refusal = AccessRefusal(module="m", operation="op", reason="not-granted", message="No.")
    assert keys == list(refusal.to_json())
    assert "refused: Literal[True]" in block
    assert f"reason: Literal[{', '.join(map(repr, get_args(RefusalReason)))}]" in block


class Memo(BaseModel):
    id: int
    title: str


async def test_a_program_that_checks_for_a_refusal_passes_the_type_check_for_every_output_shape() -> None:
    notes = Module(id="notes-v1", name="notes")

    @notes.operation(access="write")
    async def delete(id: int) -> Memo:
        return Memo(id=id, title="gone")

    @notes.operation(access="read")
    async def search(query: str) -> list[Memo]:
        return [Memo(id=1, title=query)]

    @notes.operation(access="read")
    async def count() -> int:
        return 1

    program = (
        "r = await notes.delete(id=1)\n"
        "if r.get('refused'):\n"
        "    pass\n"
        "refused = []\n"
        "for call in (notes.delete(id=1), notes.search(query='x'), notes.count()):\n"
        "    found = await call\n"
        "    match found:\n"
        "        case {'refused': True, 'message': message}:\n"
        "            refused.append(message)\n"
        "found = await notes.search(query='x')\n"
        "match found:\n"
        "    case {'refused': True, 'message': message}:\n"
        "        return refused\n"
        "n = await notes.count()\n"
        "match n:\n"
        "    case {'refused': True}:\n"
        "        return refused\n"
        "return [found[0]['title'], n + 1]\n"
    )
    sandbox = MontySandbox(type_check=True)
    async with Runtime(modules=[notes], sandbox=sandbox, access=Access(grants={"notes-v1": "none"})) as runtime:
        async with runtime.lease() as lease:
            refused = await lease.execute_tool.run(program)
            unchecked = await lease.execute_tool.run("found = await notes.search(query='x')\nreturn found[0]")
    assert not refused.is_error, refused.text
    assert isinstance(refused.value, list)
    assert len(refused.value) == 3
    assert all("not available" in message for message in refused.value)
    # A program that ignores the refusal is caught before it runs.
    assert isinstance(unchecked.failure, SyntaxFailure)
    assert unchecked.failure.type_check
    async with Runtime(modules=[notes], sandbox=MontySandbox(type_check=True)) as runtime:
        async with runtime.lease() as lease:
            allowed = await lease.execute_tool.run(program)
    assert allowed.value == ["x", 2], allowed.text


# --- Formats and constraints ----------------------------------------------------------------


class Slot(BaseModel):
    """A bookable slot."""

    start: datetime = Field(description="When it starts.")
    minutes: Annotated[int, Field(gt=0, le=480)]
    code: Annotated[str, Field(pattern=r"^[A-Z]{3}\d$", min_length=4, max_length=4)]


class BookInput(BaseModel):
    day: date = Field(description="The day to book.")
    at: time | None = None
    length: timedelta = Field(description="How long.")
    ref: UUID
    party: Annotated[int, Field(ge=1, le=12, description="How many people.")] = 2
    price: Annotated[float, Field(ge=0, lt=10_000, multiple_of=0.01)]
    name: Annotated[str, Field(min_length=1, max_length=80)]
    tags: Annotated[list[Annotated[str, Field(max_length=20)]], Field(min_length=1, max_length=5)] = ["main"]
    seats: Annotated[list[int], Field(json_schema_extra={"uniqueItems": True})] = []
    days: list[date] = []
    kind: Literal["table", "bar"] = "table"
    slots: list[Slot] = []
    corner: tuple[int, int] = (0, 0)


def test_stubs_keep_string_formats_and_field_constraints_beside_the_types() -> None:
    text = render({"book": _op(BookInput, Slot, description="Book a table.")})
    doc = dict(re.findall(r"^    (\w+): (.*)$", text, re.MULTILINE))
    assert doc["day"] == "The day to book. [a date, YYYY-MM-DD]"
    assert doc["at"] == "[a time, HH:MM:SS]"
    assert doc["length"] == "How long. [a duration, ISO 8601 (PT1H30M)]"
    assert doc["ref"] == "[format uuid]"
    assert doc["party"] == "How many people. [1 <= party <= 12]"
    assert doc["price"] == "[0 <= price < 10000, a multiple of 0.01]"
    assert doc["name"] == "[1 <= len(name) <= 80]"
    assert doc["tags"] == "[1 <= len(tags) <= 5, each item: len(item) <= 20]"
    assert doc["seats"] == "[no duplicates]"
    assert doc["days"] == "[each item: a date, YYYY-MM-DD]"
    assert "kind" not in doc  # an enum says its values in its Literal type
    assert "corner" not in doc  # a tuple says its length in its type
    assert declaration(text, "Slot") == (
        "class Slot(TypedDict):\n"
        '    """A bookable slot."""\n'
        "    start: str  # When it starts. [a date and time, ISO 8601 (2024-05-01T09:30:00Z)]\n"
        "    minutes: int  # [0 < minutes <= 480]\n"
        "    code: str  # [len(code) == 4, matches the pattern ^[A-Z]{3}\\d$]\n"
    )


def test_a_non_object_input_keeps_its_constraints_too() -> None:
    text = render_one({"type": "integer", "minimum": 1})
    assert signature(text) == "async def op(input: int, /) -> Any:"
    assert '"""input: [input >= 1]\n' in text


def test_constraint_notes_are_bounded() -> None:
    schema = field_schema(
        {
            "code": {"type": "string", "pattern": "x" * 5_000, "format": "f" * 5_000, "description": "d" * 5_000},
            "n": {"type": "number", "minimum": 10**400 if False else 1e300, "maximum": 2e300},
        }
    )
    text = render_one(schema)
    for line in text.splitlines():
        assert len(line) <= 400, line[:100]
    assert "x" * 61 not in text


def test_golden_stub_of_an_operation_with_formats_and_constraints() -> None:
    booking = Module(
        id="booking-app",
        name="booking",
        operations={
            "tables.book": operation(
                input=BookInput, output=Slot, execute=lambda _: None, access="write", description="Book a table."
            )
        },
    )
    described = Catalog(build_graph([booking], revision=1)).describe("booking.tables.book")
    golden = GOLDEN / "formats_and_constraints.pyi"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(described, encoding="utf-8")
    assert described == golden.read_text(encoding="utf-8")
    ast.parse(TYPING_PRELUDE + described)


def test_a_renderer_with_max_chars_stops_once_past_it_however_large_the_schema() -> None:
    fields = {f"field_{i}": {"type": "string", "description": "x" * 50} for i in range(1_500)}
    graph = build_graph([Module(id="t", name="t", operations={"op": _op(field_schema(fields))})], revision=1)
    (target,) = graph.operations()
    assert len(StubRenderer().operation(target)) > 100_000
    renderer = StubRenderer(max_chars=2_000)
    with pytest.raises(StubsTooLong):
        renderer.operation(target)
    # What describe shows is the same as cutting the whole rendering.
    text = Catalog(graph).describe("t.op", max_chars=2_000)
    assert len(text) <= 2_000
    assert text.endswith("# ... the rest of this declaration is too long to show.\n")
