"""The ``mycelium`` command's exit codes: one table, the same for every verb.

A script or CI step reads the code, not the message: ``0`` the verb did its work, ``1`` the work
failed (a program failed, serving failed, ``check`` found what fails it, a source failed to
acquire), ``2`` nothing was tried because the command line, the app or its config is wrong (click's
own usage errors are 2 too), ``130`` interrupted (128 + SIGINT, as a shell reports it).
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    """How ``mycelium VERB`` ends; ``docs/command-line.md`` shows the same table to people."""

    OK = 0
    """The verb did its work."""
    FAILED = 1
    """The work was tried and failed: a program, serving, a source, or ``check``'s findings."""
    BAD_USAGE = 2
    """Nothing was tried: a bad option, or an app or config that cannot be loaded. Fix the command or the app."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT) stopped the verb before it finished."""
