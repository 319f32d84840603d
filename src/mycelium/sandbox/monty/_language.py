"""The language Monty runs: a Python subset, the modules it offers and the names a program starts with.

Found by probing the real sandbox (pydantic-monty 1.4.0); ``tests/sandbox/monty/test_language.py``
probes it again, so an upgrade that changes them fails a test.
"""

from __future__ import annotations

import textwrap

from ..._language import LanguageFacts

__all__ = ["MONTY_LANGUAGE"]

# fmt: off
GUEST_IMPORTS = frozenset(
    {
        "asyncio", "base64", "binascii", "bisect", "collections", "copy", "csv", "dataclasses", "datetime", "decimal",
        "functools", "hashlib", "itertools", "json", "math", "os", "pathlib", "posixpath", "random", "re", "sys",
        "time", "tomllib", "typing", "unicodedata"
    }
)  # fmt: skip
"""What ``import X`` gives a program in the sandbox: every module it offers, and no other."""
GUEST_MODULES = GUEST_IMPORTS | {"gc"}
"""Modules the sandbox provides: :data:`GUEST_IMPORTS`, and ``gc``, which Monty reserves.

No namespace segment, at any depth, may be one of these: Monty refuses to build a
namespace that would replace one of its own modules, so every run would fail.
"""
GUEST_BUILTINS = frozenset(
    {
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BaseException",
        "Ellipsis",
        "Exception",
        "FileExistsError",
        "FileNotFoundError",
        "ImportError",
        "IndexError",
        "IsADirectoryError",
        "KeyError",
        "KeyboardInterrupt",
        "LookupError",
        "MemoryError",
        "ModuleNotFoundError",
        "NameError",
        "NotADirectoryError",
        "NotImplemented",
        "NotImplementedError",
        "OSError",
        "OverflowError",
        "PermissionError",
        "RecursionError",
        "RuntimeError",
        "StopIteration",
        "SyntaxError",
        "SystemExit",
        "TimeoutError",
        "TypeError",
        "UnboundLocalError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "ValueError",
        "ZeroDivisionError",
        "__annotations__",
        "__doc__",
        "__file__",
        "__name__",
        "__package__",
        "__spec__",
        "abs",
        "all",
        "any",
        "bin",
        "bool",
        "bytes",
        "chr",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "eval",
        "exec",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hash",
        "hex",
        "id",
        "int",
        "isinstance",
        "iter",
        "len",
        "list",
        "locals",
        "map",
        "max",
        "min",
        "next",
        "object",
        "oct",
        "open",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "setattr",
        "slice",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    }
)
"""The names every guest program starts with: builtins and module globals.

A top-level name may not be one of these: it would hide the builtin from every program.
Deeper segments may (``notes.list`` is fine).
"""
# fmt: on

MONTY_LANGUAGE = LanguageFacts(
    description=(
        "Language: a Python subset (Monty): functions, closures, classes, dataclasses, comprehensions,\n"
        "f-strings, match, try/except, async/await and asyncio.gather. Not supported: class inheritance,\n"
        "generators (yield), `del`, method decorators (@property, @staticmethod, @classmethod).\n"
        + textwrap.fill(
            f"Modules you can import (no other imports work): {', '.join(sorted(GUEST_IMPORTS))}.", width=104
        )
        + "\nThe host's files, network and environment are out of reach: os and pathlib see no host file (unless a\n"
        "workspace is described below) and os.environ is not available."
    ),
    imports=GUEST_IMPORTS,
    reserved_modules=GUEST_MODULES,
    builtins=GUEST_BUILTINS,
)
"""What a Monty program may use, as :class:`~mycelium.sandbox.monty.MontySandbox` tells the runtime."""
