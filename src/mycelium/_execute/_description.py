"""The execute tool as a model sees it: the guest language, how to call operations, how to discover them.

The sandbox says what its language is (:attr:`~mycelium.sandbox.Sandbox.language`); this
adds how a program calls the host's operations, discovers them and returns its result.
A small catalog (its stubs within a few kilobytes) is declared in full; a larger one is
shown as its namespace outline with operation counts, and the model discovers the rest.
Everything is bounded.
"""

from __future__ import annotations

from typing import Any

from .._discovery import Catalog, namespace_outline, render_bounded
from .._language import LanguageFacts
from .._tool_calls import ToolDefinition

__all__ = ["EXECUTE_INPUT_SCHEMA", "execute_definition", "execute_description", "inline_stubs"]

EXECUTE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The Python program to run.",
            # A program valid against any catalog: it shows the shape, and is what schema-driven
            # stand-ins (pydantic-ai's TestModel) send.
            "examples": ['found = await forage.search("what the user asked for")\nreturn found'],
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}
_MAX_DESCRIPTION_CHARS = 8_192
_MAX_INLINE_STUB_CHARS = 4_096
_INTRODUCTION = "Run a short Python program in a fresh sandbox and get back its JSON result.\n\n"
_CALLING = """\
Calling operations (`<ns>.<op>` stands for a real operation path: see below, or find one with forage):
- Operations are async. Await each call and keep its result in a new name, never a namespace's:
  `found = await <ns>.<op>(name="value")`. Run several at once with
  `a, b = await asyncio.gather(<ns>.<op>(...), <ns>.<op2>(...))`.
- Pass keyword arguments, or one dict (`await <ns>.<op>({"name": "value"})`), not both. Values are
  JSON: dates and times are ISO 8601 strings; the stubs say each field's format and limits.
- Each namespace is a top-level name and is also under `env` (`await env.<ns>.<op>(...)`).
- Any call may be refused by the host: it then returns {"refused": True, "reason": ..., "message": ...}
  (`Refusal` in the stubs) and nothing ran. Check with `match found:` and
  `case {"refused": True, "message": message}:`, then act on the message.
- Bad arguments raise ValueError; a host failure raises RuntimeError with a reference.
- Discover with `await forage.search(["refund a payment", "give the customer their money back",
  "refunds.create"])`: search two or three ways at once (the user's words, your own, and the API
  verb and noun you expect); each phrasing a few words. Then `await forage.describe("path")` for
  the signature, or browse with `await forage.list("prefix")`.

Result: end with `return <value>` (or a final expression). It must be JSON (dicts with string keys,
lists, strings, finite numbers, booleans, None) and small; print() output comes back as logs. Each run
starts fresh: no variable, function or import survives to the next run.

"""


def execute_definition(catalog: Catalog, language: LanguageFacts, notes: str | None = None) -> ToolDefinition:
    """The ``execute`` tool as a model sees it, for the revision ``catalog`` describes, in ``language``."""
    description = execute_description(catalog, language, notes=notes)
    return ToolDefinition(name="execute", description=description, input_schema=EXECUTE_INPUT_SCHEMA)


def execute_description(
    catalog: Catalog,
    language: LanguageFacts,
    *,
    notes: str | None = None,
    max_chars: int = _MAX_DESCRIPTION_CHARS,
    inline_chars: int = _MAX_INLINE_STUB_CHARS,
) -> str:
    """The execute tool's description: the guest language, how to call, how to discover, bounded.

    A small catalog (its stubs within ``inline_chars``) is declared in full; a larger one is
    shown as its namespace outline with operation counts, and the model discovers the rest.
    ``notes`` is what the sandbox adds about itself (a workspace, for instance).
    """
    rules = _INTRODUCTION + language.description.strip() + "\n\n" + _CALLING + (f"{notes.strip()}\n\n" if notes else "")
    stubs = inline_stubs(catalog, inline_chars)
    body = (
        "These operations are available, as Python stubs. Call each by the path in the comment above it: "
        "`# <ns>.<op>` means `await <ns>.<op>(...)`.\n\n" + stubs
        if stubs is not None
        else "Namespaces (operation counts). Find operations with `await forage.search([...])` "
        '(two or three phrasings of what you need), then `await forage.describe("path")` for the exact '
        "signature:\n\n" + namespace_outline(catalog, max_chars - len(rules) - 200)
    )
    text = rules + body
    if len(text) > max_chars:
        marker = "\n... (cut: use forage.list() and forage.describe(...) for the rest)"
        text = text[: max_chars - len(marker)] + marker
    return text


def inline_stubs(catalog: Catalog, inline_chars: int = _MAX_INLINE_STUB_CHARS) -> str | None:
    """The catalog's stubs if they fit in ``inline_chars`` and so are declared in the description in full.

    ``None`` when they do not: the model is then shown the namespace tree and discovers the rest.
    """
    stubs = render_bounded(list(catalog.targets), inline_chars + 1)
    return stubs if len(stubs) <= inline_chars and "more operations" not in stubs else None
