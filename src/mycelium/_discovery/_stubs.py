"""Render operations as Python stubs a model can call.

An operation becomes an ``async def`` with keyword parameters from its input schema, its
output type, a docstring and its access labels; object types become ``TypedDict``
declarations above it. The renderer reads JSON Schema as pydantic and hand-written
schemas produce it: ``$ref``/``$defs``, ``anyOf``/``oneOf``/``allOf``, ``enum`` and
``const`` (as ``Literal``), nullable types, arrays and tuples (``prefixItems``),
``additionalProperties``, recursive types (a type refers to itself by name) and a depth
limit beyond which a type is ``Any``. Two different types never share a name.

What a type cannot say is said beside it, bounded: a string's ``format`` (``date``,
``date-time``...) and a value's constraints (``minimum``, ``exclusiveMaximum``,
``multipleOf``, ``minLength``, ``pattern``, ``minItems``...) follow the field's description
in the docstring, or in the comment of a ``TypedDict`` field. Any call can be refused by
the host's access decisions (a grant can be withdrawn from any operation at any time), so
every return type admits :data:`REFUSAL`, declared once per rendering.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterable, Mapping
from typing import Any, get_args

from .._access import RefusalReason
from .._graph import InstalledOperation
from .._text import clip

__all__ = ["REFUSAL", "STUB_HEADER", "StubRenderer", "StubsTooLong"]

MAX_DEPTH = 8
REFUSAL = "Refusal"
"""The name of the type every stub's return type admits: what a refused call returns."""
STUB_HEADER = "import builtins\nfrom typing import Any, Literal, NotRequired, TypedDict\n\n"
"""What a stub file of operations rendered with ``qualified=True`` starts with: the imports its stubs use."""
_MAX_COMMENT_CHARS = 120
_MAX_RULE_CHARS = 160
_MAX_PATTERN_CHARS = 60
_RULE_KEYS = frozenset(
    {
        "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
        "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    }
)  # fmt: skip
# What each common string format looks like, said so a model writes it right.
_FORMATS = {
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, ISO 8601 (2024-05-01T09:30:00Z)",
    "time": "a time, HH:MM:SS",
    "duration": "a duration, ISO 8601 (PT1H30M)",
}
_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class StubsTooLong(Exception):
    """Raised by a :class:`StubRenderer` with ``max_chars`` once it has rendered that much."""


class StubRenderer:
    """Renders operations and the types they use; types are declared once and named uniquely."""

    def __init__(self, max_depth: int = MAX_DEPTH, *, qualified: bool = False, max_chars: int | None = None) -> None:
        """``qualified`` writes builtin types as ``builtins.list`` and so on, for stub files in
        which an operation called ``list`` would otherwise shadow the type (type checking).

        ``max_chars`` bounds the work: once the fields and parameters rendered since the
        renderer was made pass it, rendering stops with :class:`StubsTooLong`, however large
        the schema, since text past it would not be shown anyway.
        """
        self._max_depth = max_depth
        self._max_chars = max_chars
        self._spent = 0
        self._builtins = "builtins." if qualified else ""
        self._declarations: dict[str, str] = {}  # name -> rendered declaration, in order of first use
        self._names: dict[str, str] = {}  # fingerprint of an object schema -> its name
        # Names the stubs themselves use can never name a declared type.
        self._reserved: set[str] = {"Any", "Literal", "TypedDict", "NotRequired", "None", REFUSAL}

    def operation(self, target: InstalledOperation) -> str:
        """The stub of one operation (its types go to :meth:`declarations`)."""
        op = target.operation
        leaf = target.relative.rsplit(".", 1)[-1]
        base = _type_name(leaf)
        parameters, documented = self._parameters(op.input_schema, base)
        output = self._type(op.output_schema, op.output_schema, f"{base}Result", 0)
        if output != "Any":  # Any admits a refusal already
            output = _union([output, self._refusal()])
        labels = "read" if op.access == "read" else "write"
        if op.confirm:
            labels += "; a person confirms each call"
        paragraphs = [op.description.strip()] if op.description else []
        if documented:
            paragraphs.append("\n".join(f"{name}: {text}" for name, text in documented))
        paragraphs.append(f"Access: {labels}.")
        body = _docstring("\n\n".join(paragraphs)).replace("\n", "\n    ").replace("\n    \n", "\n\n")
        return f'# {target.path}\nasync def {leaf}({parameters}) -> {output}:\n    """{body}\n    """\n'

    def declarations(self) -> str:
        """Every type the rendered operations use, in first-use order."""
        return "".join(self._declarations.values())

    def _refusal(self) -> str:
        """Declare :data:`REFUSAL` (once) and return its name."""
        if REFUSAL not in self._declarations:
            text = self._builtins + "str"
            reasons = ", ".join(repr(reason) for reason in get_args(RefusalReason))
            self._declarations[REFUSAL] = (
                f"class {REFUSAL}(TypedDict):\n"
                '    """What a call returns instead of its result when the host refuses it; nothing ran.\n'
                '    Check: match result: case {"refused": True, "message": message}: ..."""\n'
                "    refused: Literal[True]\n"
                f"    module: {text}\n"
                f"    operation: {text}\n"
                f"    reason: Literal[{reasons}]\n"
                f"    message: {text}  # What happened and what to do instead.\n\n"
            )
        return REFUSAL

    def checkpoint(self) -> tuple[dict[str, str], dict[str, str], set[str], int]:
        """The renderer's state, to :meth:`restore` if a stub rendered since is not used."""
        return dict(self._declarations), dict(self._names), set(self._reserved), self._spent

    def restore(self, state: tuple[dict[str, str], dict[str, str], set[str], int]) -> None:
        """Forget every type declared since ``state`` was taken."""
        declarations, names, reserved, self._spent = state
        self._declarations, self._names, self._reserved = dict(declarations), dict(names), set(reserved)

    def _spend(self, chars: int) -> None:
        self._spent += chars
        if self._max_chars is not None and self._spent > self._max_chars:
            raise StubsTooLong

    def render(self, targets: Iterable[InstalledOperation]) -> str:
        """Types, then the stubs of ``targets``."""
        stubs = [self.operation(target) for target in targets]
        return self.declarations() + ("\n" if self._declarations else "") + "\n".join(stubs)

    def _parameters(self, schema: Mapping[str, Any], base: str) -> tuple[str, list[tuple[str, str]]]:
        resolved = _resolve(schema, schema)
        properties = resolved.get("properties")
        if resolved.get("type") == "object" and isinstance(properties, Mapping) and not properties:
            return "", []
        if not isinstance(properties, Mapping) or not all(_is_name(key) for key in properties):
            note = _note("input", schema, schema)
            return f"input: {self._type(schema, schema, f'{base}Input', 0)}, /", [("input", note)] if note else []
        required = set(resolved.get("required", ()))
        first: list[str] = []
        later: list[str] = []
        documented: list[tuple[str, str]] = []
        for name, field in properties.items():
            kind = self._type(field, schema, _type_name(name), 1)
            if name in required:
                first.append(f"{name}: {kind}")
            else:
                default = field.get("default", ...) if isinstance(field, Mapping) else ...
                later.append(f"{name}: {kind} = {_literal(default) if default is not ... else '...'}")
            note = _note(name, field, schema)
            if note:
                documented.append((name, note))
            self._spend(len(name) + len(kind) + len(note))
        return "*, " + ", ".join(first + later), documented

    def _type(self, schema: object, root: Mapping[str, Any], hint: str, depth: int) -> str:
        if not isinstance(schema, Mapping) or depth > self._max_depth:
            return "Any"
        if "$ref" in schema:
            return self._reference(str(schema["$ref"]), root, depth)
        if "const" in schema:
            return f"Literal[{_literal(schema['const'])}]"
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return f"Literal[{', '.join(_literal(value) for value in schema['enum'])}]"
        for combinator in ("anyOf", "oneOf"):
            if isinstance(schema.get(combinator), list):
                members = [self._type(member, root, hint, depth + 1) for member in schema[combinator]]
                return _union(members)
        if isinstance(schema.get("allOf"), list):
            return self._all_of(schema["allOf"], root, hint, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self._type({**schema, "type": member}, root, hint, depth) for member in kind])
        if kind in _JSON_TYPES:
            name = _JSON_TYPES[kind]
            return name if name == "None" else self._builtins + name
        if kind == "array":
            if isinstance(schema.get("prefixItems"), list):
                items = [self._type(item, root, f"{hint}Item", depth + 1) for item in schema["prefixItems"]]
                return f"{self._builtins}tuple[{', '.join(items)}]"
            return f"{self._builtins}list[{self._type(schema.get('items', {}), root, f'{hint}Item', depth + 1)}]"
        if kind == "object" or "properties" in schema:
            return self._object(schema, root, hint, depth)
        return "Any"

    def _all_of(self, parts: list[object], root: Mapping[str, Any], hint: str, depth: int) -> str:
        if len(parts) == 1:
            return self._type(parts[0], root, hint, depth)
        resolved = [_resolve(part, root) for part in parts]
        if all(part.get("type") == "object" or "properties" in part for part in resolved):
            merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
            for key in ("title", "description"):
                found = next((part[key] for part in resolved if key in part), None)
                if found is not None:
                    merged[key] = found
            for part in resolved:
                merged["properties"].update(part.get("properties", {}))
                merged["required"].extend(part.get("required", ()))
            return self._object(merged, root, hint, depth)
        return self._type(parts[0], root, hint, depth)

    def _object(self, schema: Mapping[str, Any], root: Mapping[str, Any], hint: str, depth: int) -> str:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties", True)
        if not isinstance(properties, Mapping) or not properties:
            value = self._type(extra, root, f"{hint}Value", depth + 1) if isinstance(extra, Mapping) else "Any"
            return f"{self._builtins}dict[{self._builtins}str, {value}]"
        # A `$ref` inside means the same text can name different types under different roots.
        keyed = {"schema": schema, "defs": root.get("$defs")} if "$ref" in json.dumps(schema, default=str) else schema
        fingerprint = json.dumps(keyed, sort_keys=True, default=str)
        if fingerprint in self._names:
            return self._names[fingerprint]
        name = self._unique(_type_name(str(schema.get("title") or hint)))
        self._names[fingerprint] = name
        self._declarations[name] = ""  # placeholder: a recursive type refers to itself by name
        self._declarations[name] = self._typed_dict(name, schema, properties, extra, root, depth)
        return name

    def _typed_dict(
        self,
        name: str,
        schema: Mapping[str, Any],
        properties: Mapping[str, Any],
        extra: object,
        root: Mapping[str, Any],
        depth: int,
    ) -> str:
        required = set(schema.get("required", ()))
        fields: list[tuple[str, str, str]] = []
        for key, field in properties.items():
            kind = self._type(field, root, _type_name(str(key)), depth + 1)
            if key not in required:
                kind = f"NotRequired[{kind}]"
            fields.append((str(key), kind, _note(str(key), field, root)))
            self._spend(sum(map(len, fields[-1])))
        description = schema.get("description")
        lines: list[str]
        if all(_is_name(key) for key, _, _ in fields):
            lines = [f"class {name}(TypedDict):"]
            if isinstance(description, str) and description.strip():
                lines.append(f'    """{_docstring(_clip(description))}"""')
            lines.extend(f"    {key}: {kind}" + (f"  # {note}" if note else "") for key, kind, note in fields)
        else:
            body = ", ".join(f"{json.dumps(key)}: {kind}" for key, kind, _ in fields)
            lines = [f'{name} = TypedDict("{name}", {{{body}}})']
        if isinstance(extra, Mapping):
            lines.append(f"# {name} may also hold other keys: {self._type(extra, root, f'{name}Value', depth + 1)}")
        return "\n".join(lines) + "\n\n"

    def _reference(self, reference: str, root: Mapping[str, Any], depth: int) -> str:
        target = _follow(reference, root)
        if target is None:
            return "Any"
        hint = reference.rsplit("/", 1)[-1]
        return self._type({"title": hint, **target}, root, hint, depth)

    def _unique(self, name: str) -> str:
        candidate, suffix = name, 2
        while candidate in self._reserved or keyword.iskeyword(candidate):
            candidate = f"{name}{suffix}"
            suffix += 1
        self._reserved.add(candidate)
        return candidate


def _follow(reference: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not reference.startswith("#/"):
        return None
    node: object = root
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _resolve(schema: object, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow a chain of ``$ref`` (bounded) to the schema it names."""
    for _ in range(MAX_DEPTH):
        if not isinstance(schema, Mapping) or "$ref" not in schema:
            break
        schema = _follow(str(schema["$ref"]), root)
    return schema if isinstance(schema, Mapping) else {}


def _union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    if "Any" in unique:
        return "Any"
    # None last reads best: `str | None`.
    unique.sort(key=lambda member: member == "None")
    return " | ".join(unique)


def _type_name(text: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", text)
    name = "".join(word[:1].upper() + word[1:] for word in words) or "Value"
    return f"T{name}" if name[0].isdigit() else name


def _is_name(key: object) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _literal(value: object) -> str:
    """A JSON value as Python source, or ``...`` when it is too long to be worth showing."""
    text = repr(value)
    return text if len(text) <= 60 else "..."


def _docstring(text: str) -> str:
    """``text`` made safe inside a triple-quoted docstring."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return text + " " if text.endswith('"') else text


def _clip(text: str) -> str:
    return clip(" ".join(text.split()), _MAX_COMMENT_CHARS)


def _note(name: str, field: object, root: Mapping[str, Any]) -> str:
    """A field's description, then in brackets what its value must satisfy; empty when neither."""
    description = field.get("description") if isinstance(field, Mapping) else None
    text = _clip(description) if isinstance(description, str) else ""
    rules = " ".join(_rules(name, field, root).split())  # one line, whatever a format holds
    if rules:
        text += (" " if text else "") + f"[{clip(rules, _MAX_RULE_CHARS)}]"
    return text


def _rules(name: str, schema: object, root: Mapping[str, Any], *, items: bool = True) -> str:
    """What a value of ``schema`` must satisfy beyond its type, as short Python-like conditions.

    Looks into the members of a union (``date | None``) and, with ``items``, one level into
    the items of an array (``list[date]``).
    """
    resolved = _resolve(schema, root)
    members = [resolved]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if isinstance(resolved.get(combinator), list):
            members.extend(_resolve(member, root) for member in resolved[combinator])
    rules = list(dict.fromkeys(rule for member in members for rule in _own_rules(name, member)))
    if items:
        each = [_rules("item", member["items"], root, items=False) for member in members if "items" in member]
        rules.extend(f"each item: {rule}" for rule in dict.fromkeys(each) if rule)
    return ", ".join(rules)


def _own_rules(name: str, schema: Mapping[str, Any]) -> list[str]:
    if _RULE_KEYS.isdisjoint(schema):
        return []
    rules: list[str] = []
    kind = schema.get("format")
    if isinstance(kind, str):
        rules.append(_FORMATS.get(kind, f"format {clip(kind, 40)}"))
    bounds = [("minimum", "maximum", name), ("minLength", "maxLength", f"len({name})")]
    bounds.append(("minProperties", "maxProperties", f"len({name})"))
    if "prefixItems" not in schema:  # a tuple's type says its length already
        bounds.append(("minItems", "maxItems", f"len({name})"))
    for low, high, subject in bounds:
        rule = _range(schema, low, high, subject)
        if rule:
            rules.append(rule)
    multiple = schema.get("multipleOf")
    if _is_number(multiple):
        rules.append(f"a multiple of {multiple!r}")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        rules.append(f"matches the pattern {clip(pattern, _MAX_PATTERN_CHARS)}")
    if schema.get("uniqueItems") is True:
        rules.append("no duplicates")
    return rules


def _range(schema: Mapping[str, Any], low: str, high: str, subject: str) -> str:
    """``1 <= x <= 10``, ``x > 0``, ``len(x) == 3``... from inclusive and exclusive bounds."""
    lower, upper = schema.get(low), schema.get(high)
    lower_op = upper_op = "<="
    if low == "minimum":  # only numbers have exclusive bounds
        if _is_number(schema.get("exclusiveMinimum")):
            lower, lower_op = schema["exclusiveMinimum"], "<"
        if _is_number(schema.get("exclusiveMaximum")):
            upper, upper_op = schema["exclusiveMaximum"], "<"
    has_lower, has_upper = _is_number(lower), _is_number(upper)
    if has_lower and has_upper:
        if lower == upper and lower_op == upper_op == "<=":
            return f"{subject} == {lower!r}"
        return f"{lower!r} {lower_op} {subject} {upper_op} {upper!r}"
    if has_lower:
        return f"{subject} {'>=' if lower_op == '<=' else '>'} {lower!r}"
    if has_upper:
        return f"{subject} {upper_op} {upper!r}"
    return ""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
