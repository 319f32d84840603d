"""Type-checking a program against the operations' stubs before it runs, and reporting what
the checker found at the guest's own line and column.

Off unless ``MontySandbox(type_check=True)``; a program that fails the check does not run.
"""

from __future__ import annotations

import json
import re

from pydantic_monty import AsyncMontySession, MontySyntaxError, MontyTypingError

from ..._signals import AbortSignal
from ...failures import SandboxError, SyntaxFailure
from ._errors import _clip, _with_advice
from ._namespaces import _guest_line, _GuestModules
from ._watch import _until_stopped

# What would let code past the type checker unseen. Matched in the whole text, strings too:
# refusing a string that happens to read "type: ignore" is the price of a check that cannot be fooled.
_UNCHECKABLE = re.compile(
    r"(?P<ignore>\b(?:type|ty)\s*:\s*ignore\b)"
    r"|(?P<dynamic>\b(?:eval|exec|compile)\b)"
    r"|(?P<assumed>\bTYPE_CHECKING\b|\bsys\s*\.\s*platform\b|\bfrom\s+sys\s+import\b)"
)
_UNCHECKABLE_WHAT = {
    "ignore": "A `# type: ignore` comment",
    "dynamic": "eval(), exec() or compile()",
    "assumed": "TYPE_CHECKING or sys.platform",
}
# The checker's word for a top-level `return`, which the runtime allows.
_TOP_LEVEL_RETURN = "`return` statement outside of a function"


async def _check_types(session: AsyncMontySession, guest: _GuestModules, code: str, signal: AbortSignal) -> None:
    """Type-check the program against the operations' stubs; raise ``SandboxError`` if it fails.

    The program is checked exactly as it will run, after one line importing every
    namespace, and nothing of it runs. A top-level ``return`` (which the checker calls
    a syntax error outside a function) is the one diagnostic let through. A program
    that opts out of the check fails as ``syntax`` and does not run: ``# type: ignore``,
    code run through ``eval``/``exec``/``compile``, or branches the checker decides
    cannot run (``TYPE_CHECKING``, ``sys.platform``, which it assumes differently).
    """
    unchecked = _UNCHECKABLE.search(code)
    if unchecked is not None:
        line = code.count("\n", 0, unchecked.start()) + 1
        what = next(text for group, text in _UNCHECKABLE_WHAT.items() if unchecked.group(group))
        message = f"{what} cannot be used in a type-checked program: the checker could not see what it hides"
        raise SandboxError(SyntaxFailure(message=message, line=line, type_check=True))
    try:
        await _until_stopped(session.feed_run(guest.checked_program(code)), signal)
    except MontySyntaxError as exc:
        frames = exc.traceback()
        at = _guest_line(frames[0].line) if frames else None
        raise SandboxError(SyntaxFailure(message=_clip(str(exc.exception())), line=at)) from None
    except MontyTypingError as exc:
        failure = _type_failure(exc.display(), guest)
        if failure is not None:
            raise SandboxError(failure) from None


def _type_failure(diagnostics: str, guest: _GuestModules) -> SyntaxFailure | None:
    """The first type-check diagnostic in the guest's own code, at its own line and column (with
    the names it may have meant, for one its namespaces lack); ``None`` when the only ones are
    top-level returns. A syntax error is reported as one."""
    try:
        found = [
            (str(item["code"]), str(item["message"]), int(item["location"]["row"]), int(item["location"]["column"]))
            for item in json.loads(diagnostics)
        ]
    except (ValueError, TypeError, KeyError):
        return SyntaxFailure(message="the program failed its type check", type_check=True)
    found = [item for item in found if not (item[0] == "invalid-syntax" and item[1] == _TOP_LEVEL_RETURN)]
    if not found:
        return None
    syntax = [item for item in found if item[0] == "invalid-syntax"]
    if syntax:
        _, message, row, column = syntax[0]
        return SyntaxFailure(message=_clip(message), line=_guest_line(row), column=column)
    code, message, row, column = found[0]
    text = f"{_with_advice(message, guest)} [{code}]" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
    if row <= 1:  # in the import line: nothing the guest wrote
        return SyntaxFailure(message=_clip(text), type_check=True)
    return SyntaxFailure(message=_clip(text), line=_guest_line(row), column=column, type_check=True)
