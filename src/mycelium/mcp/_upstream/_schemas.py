"""A tool's schema as the host checks it: everything but the regular expressions, which the server checks."""

from __future__ import annotations

from typing import Any

# Keywords whose value maps names (of properties, definitions) to schemas, not keywords to values.
_NAMING = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})


def _host_checked(schema: object, *, names: bool = False) -> Any:
    """``schema`` without its regular expressions (``pattern``, ``patternProperties``): the server checks those.

    A server's pattern checked on the host could take time without bound (``^(a|a)+$`` over a
    guest's string), on the event loop; every other keyword is checked before the call leaves.
    """
    if isinstance(schema, list):
        return [_host_checked(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if names:  # property or definition names, each naming a schema: a property may be called "pattern"
        return {key: _host_checked(value) for key, value in schema.items()}
    return {
        key: _host_checked(value, names=key in _NAMING)
        for key, value in schema.items()
        if key != "patternProperties" and not (key == "pattern" and isinstance(value, str))
    }
