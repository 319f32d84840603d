"""Operations: one typed, labelled host function, and the schemas that guard it.

An :class:`Operation` owns its input schema (which decodes what a caller sends), its
output schema (which encodes what the function returns), its access label and its
description. It knows nothing of modules, leases or sandboxes; the invocation path in
:mod:`mycelium.bindings` drives the three steps (:meth:`Operation.decode_input`,
:meth:`Operation.call`, :meth:`Operation.encode_output`) and decides whose fault a
failure is.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import anyio.to_thread
import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import pydantic
import referencing
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from ._context import InvocationContext
from ._exceptions import DefinitionError
from ._values import JsonValue, NotJson, check_json

__all__ = [
    "MAX_PHRASINGS",
    "MAX_PHRASING_CHARS",
    "AccessLabel",
    "Operation",
    "Schema",
    "SchemaSpec",
    "SchemaViolation",
    "operation",
    "operation_from_function",
    "parse_labels",
    "parse_phrasings",
]

AccessLabel: TypeAlias = Literal["read", "write"]
SchemaSpec: TypeAlias = Any
"""A pydantic model class, any type a pydantic ``TypeAdapter`` accepts, or a JSON Schema dict."""



class SchemaViolation(Exception):
    """A value broke a schema. ``errors`` lists one readable line per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


class Schema(Protocol):
    """Decodes inputs and encodes outputs for one side of an operation."""

    @property
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema a caller sees."""
        ...

    def decode(self, value: object) -> object:
        """Turn a JSON value into what the function receives; raise :class:`SchemaViolation` if invalid."""
        ...

    def encode(self, value: object) -> JsonValue:
        """Turn what the function returned into a JSON value; raise :class:`SchemaViolation` if invalid."""
        ...


class PydanticSchema:
    """A schema backed by a pydantic ``TypeAdapter``: it validates, then encodes in JSON mode."""

    def __init__(self, type_: Any, *, side: Literal["input", "output"]) -> None:
        try:
            self._adapter: TypeAdapter[Any] = TypeAdapter(type_)
            self._json_schema = self._adapter.json_schema(
                mode="validation" if side == "input" else "serialization"
            )
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            raise DefinitionError(f"the {side} type {type_!r} is not usable as a schema: {exc}") from exc

    @property
    def json_schema(self) -> dict[str, Any]:
        return self._json_schema

    def decode(self, value: object) -> object:
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise SchemaViolation(_pydantic_errors(exc)) from None

    def encode(self, value: object) -> JsonValue:
        try:
            validated = self._adapter.validate_python(value)
        except ValidationError as exc:
            raise SchemaViolation(_pydantic_errors(exc)) from None
        encoded: JsonValue = self._adapter.dump_python(validated, mode="json")
        try:
            check_json(encoded)  # JSON mode still lets NaN and infinities through
        except NotJson as exc:
            raise SchemaViolation([str(exc)]) from None
        return encoded


class JsonSchema:
    """A raw JSON Schema, checked with ``jsonschema``. It validates and never transforms."""

    def __init__(self, schema: Mapping[str, Any], *, side: Literal["input", "output"]) -> None:
        # A private copy: a host that mutates its dict later must not change the operation.
        private: dict[str, Any] = copy.deepcopy(dict(schema))
        validator_class = jsonschema.validators.validator_for(private)
        try:
            validator_class.check_schema(private)
        except jsonschema.exceptions.SchemaError as exc:
            raise DefinitionError(f"the {side} JSON Schema is invalid: {exc.message}") from exc
        self._json_schema = private
        # The validator keeps a copy of its own: editing the schema a caller reads changes nothing enforced.
        # An empty registry resolves references inside the schema only: a `$ref` naming a URL is refused,
        # never fetched (jsonschema would otherwise download it, on the event loop, wherever it points).
        self._validator = validator_class(copy.deepcopy(private), registry=referencing.Registry())

    @property
    def json_schema(self) -> dict[str, Any]:
        return self._json_schema

    def decode(self, value: object) -> object:
        self._check(value)
        return value

    def encode(self, value: object) -> JsonValue:
        self._check(value)
        return value  # type: ignore[return-value]  # _check proved it is JSON

    def _check(self, value: object) -> None:
        try:
            check_json(value)
        except NotJson as exc:
            raise SchemaViolation([str(exc)]) from None
        found = self._validator.iter_errors(value)  # type: ignore[arg-type]  # check_json proved it is JSON
        errors = sorted(found, key=lambda error: list(map(str, error.path)))
        if errors:
            raise SchemaViolation([f"{_location(error.path)}: {error.message}" for error in errors])


class EmptyObject:
    """The schema of an absent input: an object with no keys. Decodes to ``{}``."""

    @property
    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}, "additionalProperties": False}

    def decode(self, value: object) -> object:
        if type(value) is not dict:
            raise SchemaViolation([f"(value): expected an object with no keys, got {type(value).__name__}"])
        if value:
            raise SchemaViolation([f"{key}: this operation takes no input" for key in value])
        return {}

    def encode(self, value: object) -> JsonValue:
        self.decode(value)
        return {}


class AnyJson:
    """The schema of an absent output: any JSON value, passed through unchanged."""

    @property
    def json_schema(self) -> dict[str, Any]:
        return {}

    def decode(self, value: object) -> object:
        return self.encode(value)

    def encode(self, value: object) -> JsonValue:
        try:
            check_json(value)
        except NotJson as exc:
            raise SchemaViolation([str(exc)]) from None
        return value  # type: ignore[return-value]  # check_json proved it is JSON


def schema_for(spec: SchemaSpec, *, side: Literal["input", "output"]) -> Schema:
    """Build the schema for an ``input=`` or ``output=`` argument (``None`` means the default)."""
    if spec is None:
        return EmptyObject() if side == "input" else AnyJson()
    if isinstance(spec, Mapping):
        return JsonSchema(spec, side=side)
    return PydanticSchema(spec, side=side)


_Invoke: TypeAlias = Callable[[object, InvocationContext], Awaitable[object]]
_IMMUTABLE = (
    "cannot change {name!r}: an Operation is immutable (its labels are facts fixed when it is defined); "
    "define a new operation instead"
)


class Operation:
    """One typed host operation. Build it with :func:`operation` or ``@module.operation``.

    Immutable: its labels are facts fixed at definition, and the access gate reads them
    at every call, so assigning or deleting any attribute raises ``AttributeError``. An
    operation may be registered in several modules; copying one gives the same object.
    """

    __slots__ = ("_input", "_invoke", "_output", "access", "confirm", "description", "phrasings")

    access: AccessLabel
    confirm: bool
    description: str | None
    phrasings: tuple[str, ...]
    """How a person might ask for this operation, in their own words: found by search, never shown."""
    _input: Schema
    _output: Schema
    _invoke: _Invoke

    def __init__(
        self,
        *,
        input: Schema,
        output: Schema,
        invoke: _Invoke,
        access: AccessLabel,
        confirm: bool,
        description: str | None,
        phrasings: tuple[str, ...] = (),
    ) -> None:
        for side, schema in (("input", input), ("output", output)):
            _check_unicode(json.dumps(schema.json_schema, ensure_ascii=False, default=str), f"the {side} schema")
        for name, value in (
            ("_input", input),
            ("_output", output),
            ("_invoke", invoke),
            ("access", access),
            ("confirm", confirm),
            ("description", description),
            ("phrasings", phrasings),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(_IMMUTABLE.format(name=name))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(_IMMUTABLE.format(name=name))

    def __copy__(self) -> Operation:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Operation:
        return self

    @property
    def input_schema(self) -> dict[str, Any]:
        """The input as JSON Schema (an object schema for decorated functions)."""
        return self._input.json_schema

    @property
    def output_schema(self) -> dict[str, Any]:
        """The output as JSON Schema (``{}`` when any JSON value is allowed)."""
        return self._output.json_schema

    def decode_input(self, raw: object) -> object:
        """Decode a caller's input. :class:`SchemaViolation` is the caller's fault; anything else the host's."""
        return self._input.decode(raw)

    async def call(self, decoded: object, context: InvocationContext) -> object:
        """Run the function on decoded input (sync functions run in a worker thread)."""
        return await self._invoke(decoded, context)

    def encode_output(self, result: object) -> JsonValue:
        """Encode the function's result; any failure here is the host's."""
        return self._output.encode(result)

    def __repr__(self) -> str:
        return f"<Operation access={self.access} confirm={self.confirm} description={self.description!r}>"


def parse_labels(access: object, confirm: object) -> tuple[AccessLabel, bool]:
    """Parse the access labels an operation author wrote; anything unexpected is a DefinitionError."""
    if access is None:
        label: AccessLabel = "write"
    elif access == "read" and type(access) is str:
        label = "read"
    elif access == "write" and type(access) is str:
        label = "write"
    else:
        raise DefinitionError(f"access must be 'read', 'write' or None (write), got {access!r}")
    if type(confirm) is not bool:
        raise DefinitionError(f"confirm must be True or False, got {confirm!r}")
    return label, confirm


MAX_PHRASINGS = 32
"""The most phrasings one operation may carry."""
MAX_PHRASING_CHARS = 200
"""The longest phrasing, in characters: a request in a person's words, not a document."""


def parse_phrasings(phrasings: object) -> tuple[str, ...]:
    """Check the phrasings an operation author wrote; anything unexpected is a DefinitionError."""
    if phrasings is None:
        return ()
    if isinstance(phrasings, str) or not isinstance(phrasings, list | tuple):
        raise DefinitionError(
            f"phrasings must be a list of strings (how a person might ask for the operation), got {phrasings!r:.80}"
        )
    if len(phrasings) > MAX_PHRASINGS:
        raise DefinitionError(f"an operation takes at most {MAX_PHRASINGS} phrasings, got {len(phrasings)}")
    for phrasing in phrasings:
        if not isinstance(phrasing, str) or not phrasing.strip():
            raise DefinitionError(f"each phrasing must be a non-empty string, got {phrasing!r:.80}")
        if len(phrasing) > MAX_PHRASING_CHARS:
            raise DefinitionError(
                f"the phrasing {phrasing[:40]!r}... is {len(phrasing)} characters; the limit is {MAX_PHRASING_CHARS}"
            )
        _check_unicode(phrasing, "a phrasing")
    return tuple(" ".join(phrasing.split()) for phrasing in phrasings)


def _check_unicode(text: str | None, what: str) -> None:
    """Refuse text that cannot be sent anywhere: a lone surrogate fails every UTF-8 encoding."""
    if text is None:
        return
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise DefinitionError(f"{what} is not valid Unicode: it holds a lone surrogate") from exc


def operation(
    *,
    input: SchemaSpec = None,
    output: SchemaSpec = None,
    execute: Callable[..., Any],
    access: AccessLabel | None = None,
    confirm: bool = False,
    description: str | None = None,
    phrasings: Sequence[str] | None = None,
) -> Operation:
    """Define an operation explicitly.

    ``input`` and ``output`` take a pydantic model, any type pydantic's ``TypeAdapter``
    accepts, or a JSON Schema dict. Absent input is an empty object; absent output is any
    JSON value. ``execute`` may be sync or async and takes ``(input)``, ``(input, ctx)``
    or nothing. ``access`` is ``"read"`` or ``"write"`` (``None`` means write); ``confirm``
    asks a person before each call. ``phrasings`` are how a person might ask for it
    (``["give the customer their money back"]``): search finds the operation by them.
    """
    label, confirm = parse_labels(access, confirm)
    wordings = parse_phrasings(phrasings)
    if not callable(execute):
        raise DefinitionError(f"execute must be callable, got {execute!r}")
    if description is not None and not isinstance(description, str):
        raise DefinitionError(f"description must be a string, got {description!r}")
    _check_unicode(description, "description")
    arity = _positional_arity(execute)
    run = _runner(execute)

    async def invoke(decoded: object, context: InvocationContext) -> object:
        return await run(*(decoded, context)[:arity])

    return Operation(
        input=schema_for(input, side="input"),
        output=schema_for(output, side="output"),
        invoke=invoke,
        access=label,
        confirm=confirm,
        description=description,
        phrasings=wordings,
    )


def operation_from_function(
    fn: Callable[..., Any],
    *,
    access: AccessLabel | None = None,
    confirm: bool = False,
    description: str | None = None,
    phrasings: Sequence[str] | None = None,
) -> Operation:
    """Define an operation from a function's signature (the decorator form).

    Each parameter becomes a property of the input object (its annotation is the type,
    its default makes it optional); a parameter annotated :class:`InvocationContext` is
    injected instead. The return annotation is the output; without one, any JSON value.
    The description defaults to the first paragraph of the docstring; ``phrasings`` are
    as for :func:`operation`.
    """
    label, confirm = parse_labels(access, confirm)
    wordings = parse_phrasings(phrasings)
    where = getattr(fn, "__qualname__", repr(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise DefinitionError(f"cannot read the annotations of {where}: {exc}") from exc
    fields: dict[str, Any] = {}
    argument_names: dict[str, str] = {}
    context_names: list[str] = []
    for index, parameter in enumerate(inspect.signature(fn).parameters.values()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise DefinitionError(
                f"{where}: parameter {parameter.name!r} must be an ordinary or keyword-only parameter"
            )
        annotation = hints.get(parameter.name, Any)
        if annotation is InvocationContext:
            context_names.append(parameter.name)
            continue
        # Internal field names with aliases: a parameter called `json` or `schema` must not
        # collide with pydantic's own model attributes.
        internal = f"p{index}"
        argument_names[internal] = parameter.name
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[internal] = (annotation, Field(default, alias=parameter.name))
    model_name = "".join(part[:1].upper() + part[1:] for part in fn.__name__.split("_")) + "Input"
    try:
        model = pydantic.create_model(
            model_name, __config__=ConfigDict(extra="forbid", validate_by_name=False), **fields
        )
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise DefinitionError(f"{where}: parameters are not usable as an input schema: {exc}") from exc
    run = _runner(fn)

    async def invoke(decoded: object, context: InvocationContext) -> object:
        arguments = {name: getattr(decoded, internal) for internal, name in argument_names.items()}
        arguments.update(dict.fromkeys(context_names, context))
        return await run(**arguments)

    if description is None:
        description = _first_paragraph(inspect.getdoc(fn))
    _check_unicode(description, f"{where}: description")
    return Operation(
        input=PydanticSchema(model, side="input"),
        output=schema_for(hints["return"], side="output") if "return" in hints else AnyJson(),
        invoke=invoke,
        access=label,
        confirm=confirm,
        description=description,
        phrasings=wordings,
    )


def _runner(fn: Callable[..., Any]) -> Callable[..., Awaitable[object]]:
    """Adapt ``fn`` to an async callable; a sync ``fn`` runs in a worker thread."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__):

        async def run_async(*args: object, **kwargs: object) -> object:
            result: object = await fn(*args, **kwargs)
            return result

        return run_async

    async def run_sync(*args: object, **kwargs: object) -> object:
        result = await _in_thread(functools.partial(fn, *args, **kwargs))
        # A sync callable may still hand back an awaitable (a lambda wrapping a coroutine).
        if inspect.isawaitable(result):
            result = await result
        return result

    return run_sync


async def _in_thread(call: Callable[[], object]) -> object:
    """Run ``call`` in a worker thread (within anyio's thread limiter); settle only when the thread has.

    Python cannot stop a thread. A call cancelled while it waits for a thread never runs;
    once its thread has started, a cancelled call keeps waiting until the thread returns,
    and is cancelled then. So whoever waits for the call (a sandbox run, and so its slot
    and the runtime's close) waits for the real work, and the thread keeps its limiter
    token until it is done. Operations stop early by polling ``ctx.signal``.

    The token is taken here, where waiting for it is cancellable; the thread is awaited by a
    child task, which a cancellation of this task (an anyio scope, or asyncio's own
    ``task.cancel()``) reaches only through its task group, where anyio holds it until the
    thread is done.
    """
    returned: list[object] = []
    raised: list[Exception] = []

    async def run() -> None:
        try:
            # The thread runs on the token this call already holds: its own limiter never waits.
            returned.append(await anyio.to_thread.run_sync(call, limiter=anyio.CapacityLimiter(math.inf)))
        except Exception as exc:  # raised below, as the call's own, not in an exception group
            raised.append(exc)

    async with anyio.to_thread.current_default_thread_limiter(), anyio.create_task_group() as group:
        group.start_soon(run)
    if raised:
        raise raised[0]
    return returned[0]


def _positional_arity(fn: Callable[..., Any]) -> int:
    """How many of ``(input, ctx)`` to pass to an explicit ``execute`` callable."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 2
    required = [p for p in positional if p.default is p.empty]
    required_keyword_only = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if len(required) > 2 or required_keyword_only:
        raise DefinitionError(
            f"execute must take (input) or (input, ctx); {getattr(fn, '__qualname__', fn)!r} "
            f"requires {', '.join(p.name for p in [*required, *required_keyword_only])}"
        )
    return min(len(positional), 2)


def _first_paragraph(doc: str | None) -> str | None:
    if not doc:
        return None
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or None


def _location(path: typing.Iterable[object]) -> str:
    parts = [str(part) for part in path]
    return ".".join(parts) if parts else "(value)"


# Pydantic's messages for these name the class they expected: the input model generated for
# a decorated function (``InvoicesTotalInput``) or a host type, neither of which a caller
# ever saw. At the root they all mean the call had the wrong shape.
_OBJECT_ERRORS = frozenset(
    {"model_type", "model_attributes_type", "dataclass_type", "dataclass_exact_type", "dict_type", "mapping_type"}
)
_NESTED_OBJECT = "Input should be an object (a mapping of field names to values)"
_CLASS_NAMING_ERRORS = {
    "model_type": _NESTED_OBJECT,
    "dataclass_type": _NESTED_OBJECT,
    "dataclass_exact_type": _NESTED_OBJECT,
    "is_instance_of": "Input is not of the type this field takes",
}


def _pydantic_errors(exc: ValidationError) -> list[str]:
    """One line per error, located by the names a caller types (aliases, never internal field names).

    A union adds the member it tried to the location; pydantic spells a wrapped member as
    its schema (``function-after[_check(), int]``), which names host functions: those
    segments are left out.
    """
    return [
        f"{_location(part for part in error['loc'] if not _is_schema_spelling(part))}: {_pydantic_message(error)}"
        for error in exc.errors(include_url=False, include_input=True, include_context=False)
    ]


def _is_schema_spelling(part: object) -> bool:
    return isinstance(part, str) and "[" in part and part.endswith("]")


def _pydantic_message(error: Mapping[str, Any]) -> str:
    if not error["loc"] and error["type"] in _OBJECT_ERRORS:
        got = "None" if error["input"] is None else type(error["input"]).__name__
        return f"the input must be named arguments, got {got}: call it with keyword arguments or one mapping"
    message: str = _CLASS_NAMING_ERRORS.get(error["type"], error["msg"])
    return message
