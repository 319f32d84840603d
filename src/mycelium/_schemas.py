"""The schemas that guard an operation: what decodes a caller's input, what encodes its output.

A pydantic model or type (through a ``TypeAdapter``), a JSON Schema dict (checked by
``jsonschema``, never fetching a remote ``$ref``), or the defaults: an empty object in, any
JSON value out. A value that breaks a schema raises :class:`SchemaViolation` with one
readable line per problem, located by the names a caller types.
"""

from __future__ import annotations

import copy
import functools
import typing
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeAlias

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import pydantic
import referencing
from pydantic import TypeAdapter, ValidationError

from ._exceptions import DefinitionError
from ._values import JsonValue, NotJson, check_json

__all__ = [
    "AnyJson",
    "EmptyObject",
    "JsonSchema",
    "PydanticSchema",
    "Schema",
    "SchemaSpec",
    "SchemaViolation",
    "schema_for",
]

SchemaSpec: TypeAlias = Any
"""A pydantic model class, any type a pydantic ``TypeAdapter`` accepts, or a JSON Schema dict."""
# How many types are adapted once and shared by the operations that use them (the most recently used).
_SHARED_TYPES = 256


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
            self._json_schema = self._adapter.json_schema(mode="validation" if side == "input" else "serialization")
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            raise DefinitionError(f"the {side} type {type_!r} is not usable as a schema: {exc}") from exc

    def copy(self) -> PydanticSchema:
        """The same adapter, with a JSON Schema of its own (a caller may change the one it reads)."""
        twin = object.__new__(PydanticSchema)
        twin._adapter = self._adapter
        twin._json_schema = _copied(self._json_schema)
        return twin

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
    """Build the schema for an ``input=`` or ``output=`` argument (``None`` means the default).

    A pydantic type many operations share (``list[Note]`` returned by a dozen of them) is
    adapted once: building its adapter and its JSON Schema costs a millisecond or more, a
    copy of the schema a twentieth of that.
    """
    if spec is None:
        return EmptyObject() if side == "input" else AnyJson()
    if isinstance(spec, Mapping):
        return JsonSchema(spec, side=side)
    try:
        hash(spec)
    except TypeError:  # an unhashable annotation cannot be looked up: adapted afresh
        return PydanticSchema(spec, side=side)
    return _adapted(spec, side).copy()


@functools.lru_cache(maxsize=_SHARED_TYPES)
def _adapted(spec: SchemaSpec, side: Literal["input", "output"]) -> PydanticSchema:
    # A type that is not usable raises, and nothing is kept for it.
    return PydanticSchema(spec, side=side)


def _copied(node: Any) -> Any:
    """A copy of a JSON Schema's dicts and lists (its strings and numbers are shared: nothing changes them)."""
    if type(node) is dict:
        return {key: _copied(value) for key, value in node.items()}
    if type(node) is list:
        return [_copied(value) for value in node]
    return node


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
