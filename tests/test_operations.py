"""Operations: schemas, execute shapes, the decorator form, access labels, decoding and encoding.

Every call goes through the real invocation path (``Runtime.invoke``), with a sandbox that
runs nothing, unless a test is about what an execute returns.
"""

import dataclasses
import socket
import threading
from decimal import Decimal
from typing import Annotated, Any

import anyio
import anyio.to_thread
import pydantic
import pytest
from pydantic import BaseModel, Field, field_serializer
from typing_extensions import TypedDict

import mycelium
from mycelium import DefinitionError, InvalidInput, InvocationContext, Module, OperationFailed, Runtime, operation
from mycelium.testing import direct_sandbox, rejecting_sandbox

MODULE_ID = "test-operations"


class Greeting(BaseModel):
    name: str
    times: int = 1


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Span:
    start: int
    end: int


class Price(BaseModel):
    amount: Decimal


class Counted(BaseModel):
    n: int

    @field_serializer("n")
    def _as_text(self, n: int) -> str:
        return str(n)


NON_NEGATIVE = Annotated[int, Field(ge=0)]

POINT_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}


def _module(operations: dict[str, mycelium.Operation | Module]) -> Module:
    return Module(id=MODULE_ID, name="ops", operations=operations)


async def _invoke(op: mycelium.Operation, input: object = None) -> object:
    """Run ``op`` once through ``Runtime.invoke`` (``None`` input means ``{}``)."""
    async with Runtime(modules=[_module({"op": op})], sandbox=rejecting_sandbox()) as runtime:
        return await runtime.invoke(MODULE_ID, "op", input)


# --- accepted schema kinds -------------------------------------------------------------------


async def test_pydantic_model_input_is_decoded_into_the_model_and_exposed_as_json_schema() -> None:
    received: list[object] = []

    def execute(greeting: Greeting) -> str:
        received.append(greeting)
        return f"hello {greeting.name} x{greeting.times}"

    op = operation(input=Greeting, output=str, execute=execute)

    assert op.input_schema == Greeting.model_json_schema()
    assert op.input_schema["required"] == ["name"]
    assert op.output_schema == {"type": "string"}
    assert await _invoke(op, {"name": "ada"}) == "hello ada x1"
    assert received == [Greeting(name="ada", times=1)]


async def test_typeddict_input_is_accepted_and_exposed_as_an_object_schema() -> None:
    op = operation(input=Point, output=Point, execute=lambda point: {"x": point["y"], "y": point["x"]})

    assert op.input_schema["type"] == "object"
    assert set(op.input_schema["properties"]) == {"x", "y"}
    assert sorted(op.input_schema["required"]) == ["x", "y"]
    assert op.output_schema["type"] == "object"
    assert await _invoke(op, {"x": 1, "y": 2}) == {"x": 2, "y": 1}


async def test_dataclass_input_is_decoded_into_the_dataclass_and_exposed_as_json_schema() -> None:
    received: list[object] = []

    def execute(span: Span) -> int:
        received.append(span)
        return span.end - span.start

    op = operation(input=Span, output=int, execute=execute)

    assert op.input_schema["type"] == "object"
    assert set(op.input_schema["properties"]) == {"start", "end"}
    assert op.output_schema == {"type": "integer"}
    assert await _invoke(op, {"start": 3, "end": 10}) == 7
    assert received == [Span(start=3, end=10)]


async def test_list_of_int_input_is_accepted_and_exposed_as_an_array_schema() -> None:
    op = operation(input=list[int], output=int, execute=lambda numbers: sum(numbers))

    assert op.input_schema == {"type": "array", "items": {"type": "integer"}}
    assert await _invoke(op, [1, 2, 3]) == 6


async def test_annotated_field_constraint_input_is_enforced_and_exposed_in_the_schema() -> None:
    op = operation(input=NON_NEGATIVE, output=NON_NEGATIVE, execute=lambda n: n * 2)

    assert op.input_schema == {"type": "integer", "minimum": 0}
    assert op.output_schema == {"type": "integer", "minimum": 0}
    assert await _invoke(op, 4) == 8
    with pytest.raises(InvalidInput):
        await _invoke(op, -1)


async def test_json_schema_dict_input_is_validated_and_passed_through_unchanged() -> None:
    received: list[object] = []

    def execute(point: object) -> object:
        received.append(point)
        return point

    op = operation(input=POINT_JSON_SCHEMA, output=POINT_JSON_SCHEMA, execute=execute)

    assert op.input_schema == POINT_JSON_SCHEMA
    assert op.output_schema == POINT_JSON_SCHEMA
    assert await _invoke(op, {"x": 1, "y": 2}) == {"x": 1, "y": 2}
    assert received == [{"x": 1, "y": 2}]
    with pytest.raises(InvalidInput):
        await _invoke(op, {"x": 1, "y": "two"})


def test_json_schema_dict_is_copied_so_later_mutation_does_not_change_the_operation() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False}
    op = operation(input=schema, execute=lambda point: point)

    schema["properties"]["x"]["type"] = "string"

    assert op.input_schema["properties"]["x"] == {"type": "integer"}


def test_an_invalid_json_schema_dict_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError):
        operation(input={"type": "no-such-type"}, execute=lambda point: point)


# --- absent input and output -----------------------------------------------------------------


async def test_absent_input_is_an_empty_object() -> None:
    op = operation(execute=lambda input: {"received": input})

    assert op.input_schema["type"] == "object"
    assert op.input_schema.get("properties", {}) == {}
    assert await _invoke(op, {}) == {"received": {}}
    assert await _invoke(op) == {"received": {}}


async def test_absent_input_refuses_extra_keys_as_invalid_input() -> None:
    ran: list[object] = []
    op = operation(execute=lambda input: ran.append(input))

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"surprise": 1})

    assert "surprise" in str(caught.value)
    assert ran == []


async def test_absent_output_allows_any_json_value_unchanged() -> None:
    value = {"a": [1, 2.5, "three", None, True], "b": {"c": []}}
    op = operation(execute=lambda: value)

    assert op.output_schema == {}
    assert await _invoke(op) == value


async def test_absent_output_refuses_a_non_json_value_as_a_host_failure() -> None:
    op = operation(execute=lambda: {1, 2, 3})

    with pytest.raises(OperationFailed) as caught:
        await _invoke(op)

    assert not isinstance(caught.value, InvalidInput)


# --- execute shapes --------------------------------------------------------------------------


async def test_sync_execute_may_take_no_parameters() -> None:
    op = operation(execute=lambda: "no parameters")

    assert await _invoke(op) == "no parameters"


async def test_sync_execute_may_take_only_the_input() -> None:
    op = operation(input=Greeting, execute=lambda greeting: greeting.name)

    assert await _invoke(op, {"name": "ada"}) == "ada"


async def test_sync_execute_may_take_the_input_and_the_invocation_context() -> None:
    seen: list[InvocationContext] = []

    def execute(greeting: Greeting, ctx: InvocationContext) -> str:
        seen.append(ctx)
        return greeting.name

    assert await _invoke(operation(input=Greeting, execute=execute), {"name": "ada"}) == "ada"

    [ctx] = seen
    assert isinstance(ctx, InvocationContext)
    assert ctx.module_id == MODULE_ID
    assert ctx.operation == "op"


async def test_async_execute_may_take_no_parameters() -> None:
    async def execute() -> str:
        return "async, no parameters"

    assert await _invoke(operation(execute=execute)) == "async, no parameters"


async def test_async_execute_may_take_only_the_input() -> None:
    async def execute(greeting: Greeting) -> str:
        return greeting.name.upper()

    assert await _invoke(operation(input=Greeting, execute=execute), {"name": "ada"}) == "ADA"


async def test_async_execute_receives_an_invocation_context_with_module_id_and_operation() -> None:
    seen: list[InvocationContext] = []

    async def execute(greeting: Greeting, ctx: InvocationContext) -> str:
        seen.append(ctx)
        return greeting.name

    child = Module(id="child-module", name="child", operations={"greet": operation(input=Greeting, execute=execute)})
    async with Runtime(modules=[_module({"people": child})], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "people.greet", {"name": "ada"}) == "ada"

    [ctx] = seen
    assert isinstance(ctx, InvocationContext)
    assert ctx.module_id == MODULE_ID
    assert ctx.operation == "people.greet"


async def test_sync_execute_runs_in_a_worker_thread_not_the_event_loop() -> None:
    loop_thread = threading.current_thread()
    ran_in: list[threading.Thread] = []

    def execute() -> str:
        ran_in.append(threading.current_thread())
        return "done"

    assert await _invoke(operation(execute=execute)) == "done"
    assert len(ran_in) == 1
    assert ran_in[0] is not loop_thread


async def test_sync_execute_does_not_block_the_event_loop_while_it_waits() -> None:
    started = threading.Event()
    release = threading.Event()
    released_in_time: list[bool] = []

    def execute() -> str:
        started.set()
        # Only the event loop can set `release`; if this ran on the loop, it would never be set.
        released_in_time.append(release.wait(timeout=10))
        return "released"

    results: list[object] = []

    async def call() -> None:
        results.append(await _invoke(operation(execute=execute)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.to_thread.run_sync(started.wait)
        release.set()

    assert released_in_time == [True]
    assert results == ["released"]


async def test_async_execute_runs_on_the_event_loop_thread() -> None:
    loop_thread = threading.current_thread()
    ran_in: list[threading.Thread] = []

    async def execute() -> None:
        ran_in.append(threading.current_thread())

    await _invoke(operation(execute=execute))
    assert ran_in == [loop_thread]


def test_execute_with_a_required_third_parameter_is_a_definition_error() -> None:
    def execute(input: object, ctx: InvocationContext, extra: object) -> None:
        return None

    with pytest.raises(DefinitionError):
        operation(execute=execute)


def test_execute_with_a_required_keyword_only_parameter_is_a_definition_error() -> None:
    def execute(input: object, *, extra: object) -> None:
        return None

    with pytest.raises(DefinitionError):
        operation(execute=execute)


def test_execute_that_is_not_callable_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError):
        operation(execute="not a function")  # type: ignore[arg-type]


# --- decorator form --------------------------------------------------------------------------


async def test_decorated_sync_function_becomes_an_operation_called_with_its_parameters() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def add(a: int, b: int = 10) -> int:
        return a + b

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "add", {"a": 1, "b": 2}) == 3
        assert await runtime.invoke(MODULE_ID, "add", {"a": 1}) == 11


async def test_decorated_async_function_becomes_an_operation_called_with_its_parameters() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    async def shout(text: str) -> str:
        return text.upper()

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "shout", {"text": "hi"}) == "HI"


async def test_decorated_sync_function_runs_in_a_worker_thread() -> None:
    loop_thread = threading.current_thread()
    ran_in: list[threading.Thread] = []
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def where() -> None:
        ran_in.append(threading.current_thread())

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        await runtime.invoke(MODULE_ID, "where", {})

    assert len(ran_in) == 1
    assert ran_in[0] is not loop_thread


def test_decorated_parameters_form_the_input_schema_with_required_and_defaulted_properties() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def search(query: str, limit: int = 10, tags: list[str] | None = None) -> list[str]:
        return []

    schema = module.operations["search"].input_schema
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"query", "limit", "tags"}
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["limit"]["type"] == "integer"
    assert schema["properties"]["limit"]["default"] == 10
    assert schema.get("additionalProperties") is False


async def test_decorated_input_refuses_unknown_keys_and_missing_required_parameters() -> None:
    ran: list[object] = []
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def search(query: str, limit: int = 10) -> None:
        ran.append(query)

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(InvalidInput) as extra:
            await runtime.invoke(MODULE_ID, "search", {"query": "x", "unknown": 1})
        with pytest.raises(InvalidInput) as missing:
            await runtime.invoke(MODULE_ID, "search", {"limit": 1})

    assert "unknown" in str(extra.value)
    assert "query" in str(missing.value)
    assert ran == []


async def test_decorated_parameter_annotated_invocation_context_is_injected_not_in_the_schema() -> None:
    seen: list[InvocationContext] = []
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    async def who(name: str, ctx: InvocationContext) -> str:
        seen.append(ctx)
        return name

    schema = module.operations["who"].input_schema
    assert set(schema["properties"]) == {"name"}
    assert "ctx" not in schema.get("required", [])

    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "who", {"name": "ada"}) == "ada"
        with pytest.raises(InvalidInput):
            await runtime.invoke(MODULE_ID, "who", {"name": "ada", "ctx": {}})

    [ctx] = seen
    assert isinstance(ctx, InvocationContext)
    assert ctx.module_id == MODULE_ID
    assert ctx.operation == "who"


async def test_decorated_return_annotation_is_the_output_schema_and_encodes_the_result() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def greet(name: str) -> Greeting:
        return Greeting(name=name, times=2)

    assert module.operations["greet"].output_schema == Greeting.model_json_schema(mode="serialization")
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "greet", {"name": "ada"}) == {"name": "ada", "times": 2}


async def test_decorated_function_without_return_annotation_outputs_any_json_value() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def anything():  # type: ignore[no-untyped-def]
        return {"free": ["form", 1]}

    assert module.operations["anything"].output_schema == {}
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "anything", {}) == {"free": ["form", 1]}


def test_decorated_docstring_first_paragraph_is_the_description() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def search(query: str) -> list[str]:
        """Find notes whose title
        contains the query.

        Second paragraph with implementation notes that the model must not see.
        """
        return []

    assert module.operations["search"].description == "Find notes whose title contains the query."


def test_decorated_explicit_description_overrides_the_docstring() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation(description="Explicit.")
    def search(query: str) -> list[str]:
        """From the docstring."""
        return []

    assert module.operations["search"].description == "Explicit."


def test_decorated_name_overrides_the_registration_key() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation(name="list")
    def list_things() -> list[str]:
        return []

    assert set(module.operations) == {"list"}


async def test_decorated_parameters_named_json_and_schema_work() -> None:
    module = Module(id=MODULE_ID, name="ops")

    @module.operation()
    def store(json: str, schema: int = 1, model_config: str = "c") -> dict[str, object]:
        return {"json": json, "schema": schema, "model_config": model_config}

    input_schema = module.operations["store"].input_schema
    assert set(input_schema["properties"]) == {"json", "schema", "model_config"}
    assert input_schema["required"] == ["json"]
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        assert await runtime.invoke(MODULE_ID, "store", {"json": "{}", "schema": 2}) == {
            "json": "{}",
            "schema": 2,
            "model_config": "c",
        }


def test_decorated_function_with_var_positional_parameters_is_a_definition_error() -> None:
    module = Module(id=MODULE_ID, name="ops")

    def many(*items: int) -> None:
        return None

    with pytest.raises(DefinitionError):
        module.operation()(many)


def test_decorated_function_with_var_keyword_parameters_is_a_definition_error() -> None:
    module = Module(id=MODULE_ID, name="ops")

    def loose(**options: int) -> None:
        return None

    with pytest.raises(DefinitionError):
        module.operation()(loose)


def test_decorator_returns_the_function_unchanged() -> None:
    module = Module(id=MODULE_ID, name="ops")

    def add(a: int, b: int) -> int:
        return a + b

    decorated = module.operation()(add)

    assert decorated is add
    assert add(2, 3) == 5


# --- access labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(("access", "expected"), [("read", "read"), ("write", "write"), (None, "write")])
def test_access_label_read_write_or_none_which_means_write(access: str | None, expected: str) -> None:
    op = operation(execute=lambda: None, access=access)  # type: ignore[arg-type]

    assert op.access == expected


@pytest.mark.parametrize("access", ["READ", "admin", 1, True, "", " read"])
def test_access_label_other_than_read_or_write_is_a_definition_error(access: object) -> None:
    with pytest.raises(DefinitionError):
        operation(execute=lambda: None, access=access)  # type: ignore[arg-type]


@pytest.mark.parametrize("access", ["READ", "admin", 1])
def test_decorator_access_label_other_than_read_or_write_is_a_definition_error(access: object) -> None:
    module = Module(id=MODULE_ID, name="ops")

    def fn() -> None:
        return None

    with pytest.raises(DefinitionError):
        module.operation(access=access)(fn)  # type: ignore[arg-type]
    assert module.operations == {}


@pytest.mark.parametrize("confirm", [True, False])
def test_confirm_accepts_exactly_a_bool(confirm: bool) -> None:
    assert operation(execute=lambda: None, confirm=confirm).confirm is confirm


@pytest.mark.parametrize("confirm", [1, 0, "yes", None])
def test_confirm_that_is_not_exactly_a_bool_is_a_definition_error(confirm: object) -> None:
    with pytest.raises(DefinitionError):
        operation(execute=lambda: None, confirm=confirm)  # type: ignore[arg-type]


def test_decorator_confirm_that_is_not_exactly_a_bool_is_a_definition_error() -> None:
    module = Module(id=MODULE_ID, name="ops")

    def fn() -> None:
        return None

    with pytest.raises(DefinitionError):
        module.operation(confirm="yes")(fn)  # type: ignore[arg-type]


# --- immutability ----------------------------------------------------------------------------


def _write_op() -> mycelium.Operation:
    return operation(execute=lambda: None, access="write", confirm=True, description="Writes.")


@pytest.mark.parametrize(
    ("name", "value"),
    [("access", "read"), ("confirm", False), ("description", "Reads."), ("_invoke", None), ("new_attribute", 1)],
)
def test_an_operation_is_immutable_assigning_any_attribute_raises_attribute_error(name: str, value: object) -> None:
    op = _write_op()
    with pytest.raises(AttributeError, match="immutable"):
        setattr(op, name, value)
    assert (op.access, op.confirm, op.description) == ("write", True, "Writes.")


@pytest.mark.parametrize("name", ["access", "confirm", "description", "_input"])
def test_an_operation_is_immutable_deleting_any_attribute_raises_attribute_error(name: str) -> None:
    op = _write_op()
    with pytest.raises(AttributeError, match="immutable"):
        delattr(op, name)
    assert (op.access, op.confirm, op.description) == ("write", True, "Writes.")


def test_copying_an_immutable_operation_gives_the_same_operation() -> None:
    import copy

    op = _write_op()
    assert copy.copy(op) is op
    assert copy.deepcopy({"op": op})["op"] is op


async def test_editing_a_json_schema_read_from_an_operation_changes_nothing_it_enforces() -> None:
    op = operation(input=POINT_JSON_SCHEMA, execute=lambda point: point["x"] + point["y"], access="read")
    op.input_schema["required"] = []
    op.input_schema["additionalProperties"] = True
    module = Module(id=MODULE_ID, name="ops", operations={"add": op})
    async with Runtime(modules=[module], sandbox=rejecting_sandbox()) as runtime:
        with pytest.raises(InvalidInput):
            await runtime.invoke(MODULE_ID, "add", {"x": 1})
        assert await runtime.invoke(MODULE_ID, "add", {"x": 1, "y": 2}) == 3


def test_operations_returning_the_same_type_each_have_a_schema_of_their_own() -> None:
    # The type is adapted once for both; editing what one shows must not change the other.
    first = operation(output=list[Greeting], execute=lambda: [])
    second = operation(output=list[Greeting], execute=lambda: [])
    first.output_schema["$defs"]["Greeting"]["properties"]["name"]["title"] = "Changed"
    first.output_schema["items"] = {}
    assert second.output_schema["items"] == {"$ref": "#/$defs/Greeting"}
    assert second.output_schema["$defs"]["Greeting"]["properties"]["name"]["title"] == "Name"


def test_a_type_that_is_not_usable_as_a_schema_is_refused_every_time_it_is_given() -> None:
    class Opaque:
        pass

    for _ in range(2):  # a refusal is not remembered as a schema
        with pytest.raises(DefinitionError, match="not usable as a schema"):
            operation(output=Opaque, execute=lambda: None)


# --- input decoding --------------------------------------------------------------------------


async def test_invalid_input_raises_invalid_input_and_the_operation_never_runs() -> None:
    ran: list[object] = []
    op = operation(input=Greeting, execute=lambda greeting: ran.append(greeting))

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"name": 5, "times": "many"})

    assert isinstance(caught.value, ValueError)
    assert ran == []


async def test_invalid_input_message_lists_each_field_error() -> None:
    op = operation(input=Greeting, execute=lambda greeting: None)

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"name": 5, "times": "many"})

    message = str(caught.value)
    assert "ops.op" in message
    assert "name" in message
    assert "times" in message
    assert len(caught.value.errors) == 2


async def test_invalid_input_against_a_json_schema_lists_each_field_error() -> None:
    op = operation(input=POINT_JSON_SCHEMA, execute=lambda point: None)

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"x": "one", "y": "two"})

    assert len(caught.value.errors) == 2
    assert "x" in str(caught.value)
    assert "y" in str(caught.value)


async def test_invalid_input_from_a_validator_value_error_is_invalid_input() -> None:
    class Even(BaseModel):
        n: int

        @pydantic.field_validator("n")
        @classmethod
        def _even(cls, n: int) -> int:
            if n % 2:
                raise ValueError("n must be even")
            return n

    op = operation(input=Even, execute=lambda even: even.n)

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"n": 3})

    assert "n must be even" in str(caught.value)


async def test_invalid_input_message_is_bounded_for_many_field_errors() -> None:
    wide = pydantic.create_model("Wide", **{f"field_{index}": (int, ...) for index in range(500)})  # type: ignore[call-overload]
    ran: list[object] = []
    op = operation(input=wide, execute=lambda value: ran.append(value))

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {f"field_{index}": "not a number" for index in range(500)})

    message = str(caught.value)
    assert len(message) <= 2_000
    assert "field_0" in message
    assert "more" in message  # the cut is said, not silent
    assert len(caught.value.errors) == 500
    assert ran == []


async def test_invalid_input_message_is_bounded_for_one_huge_bad_value() -> None:
    op = operation(input={"type": "object", "properties": {"n": {"type": "integer"}}}, execute=lambda value: None)

    with pytest.raises(InvalidInput) as caught:
        await _invoke(op, {"n": "x" * 100_000})

    assert len(str(caught.value)) <= 2_000


async def test_non_json_input_to_a_json_schema_operation_is_invalid_input() -> None:
    op = operation(input={"type": "array"}, execute=lambda value: value)

    with pytest.raises(InvalidInput):
        await _invoke(op, [{1, 2}])


# --- output encoding -------------------------------------------------------------------------


async def test_pydantic_output_encodes_a_decimal_field_as_its_string_form() -> None:
    op = operation(output=Price, execute=lambda: Price(amount=Decimal("1.50")))

    assert await _invoke(op) == {"amount": "1.50"}


async def test_pydantic_output_applies_a_field_serializer() -> None:
    op = operation(output=Counted, execute=lambda: Counted(n=1))

    assert await _invoke(op) == {"n": "1"}


async def test_pydantic_output_validates_a_plain_dict_then_encodes_it() -> None:
    op = operation(output=Price, execute=lambda: {"amount": Decimal("2.25")})

    assert await _invoke(op) == {"amount": "2.25"}


async def test_pydantic_output_encoding_reaches_the_guest_in_an_execute() -> None:
    op = operation(output=Counted, execute=lambda: Counted(n=7))

    async def program(bindings: Any, signal: object) -> object:
        return await bindings.ops.op()

    async with (
        Runtime(modules=[_module({"op": op})], sandbox=direct_sandbox(program)) as runtime,
        runtime.lease() as lease,
    ):
        result = await lease.execute_tool.run("return await ops.op()")

    assert not result.is_error
    assert result.value == {"n": "7"}
    assert result.text == '{"n":"7"}'


async def test_json_schema_output_only_validates_and_returns_the_value_unchanged() -> None:
    value = {"x": 1, "y": 2, "note": "kept although not in properties"}
    schema = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}
    op = operation(output=schema, execute=lambda: value)

    assert await _invoke(op) == value


async def test_json_schema_output_does_not_coerce_values() -> None:
    op = operation(output={"type": "integer"}, execute=lambda: "5")

    with pytest.raises(OperationFailed):
        await _invoke(op)


def test_a_json_schema_reference_to_a_url_is_never_fetched() -> None:
    # A listening socket on loopback stands for an internal service a schema could point at.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/internal/admin"
        op = operation(input={"type": "object", "properties": {"a": {"$ref": url}}}, execute=lambda: 1)
        with pytest.raises(Exception, match="Unresolvable"):
            op.decode_input({"a": 1})
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
