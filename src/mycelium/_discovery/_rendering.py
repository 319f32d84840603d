"""Stubs bounded for a model: as many operations as fit, and a count of those that did not.

``describe`` and the execute tool's own description show operations as Python stubs
within a character budget. Rendering stops once it passes the budget, so a huge schema
costs no more than a small one, and whatever is left out is said, never cut silently.
"""

from __future__ import annotations

from .._graph import InstalledOperation
from ._stubs import StubRenderer, StubsTooLong


def render_bounded(targets: list[InstalledOperation], max_chars: int, *, prefix: str = "") -> str:
    """Stubs for ``targets`` within ``max_chars``; what did not fit is counted, never cut silently.

    Rendering stops once it passes ``max_chars``, so a huge schema costs no more than a small one.
    """
    renderer = StubRenderer(max_chars=max_chars)
    stubs: list[str] = []
    cut = False  # the first operation alone is too long: the start of it is shown
    left = 0
    for shown, target in enumerate(targets):
        state = renderer.checkpoint()
        try:
            stub: str | None = renderer.operation(target)
        except StubsTooLong:
            stub = None
        if stub is not None and (not stubs or len(_join(renderer.declarations(), [*stubs, stub])) <= max_chars - 200):
            stubs.append(stub)
            continue
        cut = not stubs
        if not cut:
            renderer.restore(state)  # its types go with it
        left = len(targets) - shown - int(cut)
        break
    where = f" under {prefix}" if prefix else ""
    left_out = (
        f"\n# ... {left} more operation{'s' if left != 1 else ''}{where} not shown: "
        "describe a longer path, or use forage.search(...).\n"
        if left
        else ""
    )
    text = _join(renderer.declarations(), stubs)
    if cut or len(text) + len(left_out) > max_chars:
        marker = "\n# ... the rest of this declaration is too long to show.\n"
        text = text[: max(0, max_chars - len(marker) - len(left_out))] + marker
    return text + left_out


def _join(declarations: str, stubs: list[str]) -> str:
    return declarations + ("\n" if declarations else "") + "\n".join(stubs)
