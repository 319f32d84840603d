"""Operations: one typed, labelled host function, guarded by its schemas (:mod:`mycelium._schemas`).

An :class:`Operation` owns its input schema (which decodes what a caller sends), its
output schema (which encodes what the function returns), its access label and its
description. It knows nothing of modules, leases or sandboxes; the invocation path in
:mod:`mycelium._bindings` drives the three steps (:meth:`Operation.decode_input`,
:meth:`Operation.call`, :meth:`Operation.encode_output`) and decides whose fault a
failure is.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeAlias

import pydantic
from pydantic import ConfigDict, Field

from ._context import InvocationContext
from ._exceptions import DefinitionError
from ._host_calls import positional_arity, runner
from ._schemas import AnyJson, PydanticSchema, Schema, SchemaSpec, schema_for
from ._values import JsonValue

__all__ = [
    "MAX_PHRASINGS",
    "MAX_PHRASING_CHARS",
    "AccessLabel",
    "Operation",
    "operation",
    "operation_from_function",
    "parse_labels",
    "parse_phrasings",
]

AccessLabel: TypeAlias = Literal["read", "write"]
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

    def call(self, decoded: object, context: InvocationContext) -> Awaitable[object]:
        """Run the function on decoded input (sync functions run in a worker thread); await the result."""
        return self._invoke(decoded, context)

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
    arity = positional_arity(execute)
    run = runner(execute)

    def invoke(decoded: object, context: InvocationContext) -> Awaitable[object]:
        return run(*(decoded, context)[:arity])

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
    run = runner(fn)

    def invoke(decoded: object, context: InvocationContext) -> Awaitable[object]:
        arguments = {name: getattr(decoded, internal) for internal, name in argument_names.items()}
        arguments.update(dict.fromkeys(context_names, context))
        return run(**arguments)

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


def _first_paragraph(doc: str | None) -> str | None:
    if not doc:
        return None
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or None
