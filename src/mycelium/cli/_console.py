"""What the command writes for people: its logs on stderr, and the values and text a verb prints.

Output depends on where it goes: a terminal gets colour and pretty JSON, a pipe, a log file
or a client's log pane gets plain lines that are never wrapped or padded.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import json
import logging
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

from .._execute._runlog import RUN_FIELDS
from .._values import dumps_compact

# The name people read in every log line of the command, whichever of its modules logs.
logger = logging.getLogger("mycelium.cli")

_NOISY_LOGGERS = ("uvicorn", "mcp", "httpx", "httpx2", "sse_starlette")


class LogFormat(enum.StrEnum):
    """How the command writes its logs."""

    text = "text"
    json = "json"


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the run log's fields, and the traceback.

    Only the run log's fields are taken from a record's attributes: what other libraries
    attach to their records is theirs to name, and is left out.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in RUN_FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=True, default=str)


@contextlib.contextmanager
def logging_to(console: Console, level: str, log_format: LogFormat = LogFormat.text) -> Iterator[None]:
    """Send logs to ``console`` at ``level`` while serving; restore the previous set-up afterwards.

    ``json`` writes one object a line on stderr, for a log shipper, terminal or not.
    Restoring matters when ``main()`` runs inside another program (tests, a host's own tool).
    """
    numeric = logging.getLevelNamesMapping()[level.upper()]
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    noisy = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    saved_noisy = [each.level for each in noisy]
    handler: logging.Handler
    if log_format is LogFormat.json:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLines())
    elif console.is_terminal:
        handler = RichHandler(console=console, show_path=False)
    else:
        # A log file or a client's log pane: one plain line per record, never wrapped or padded.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.handlers = [handler]
    root.setLevel(numeric)
    if numeric > logging.DEBUG:
        # Per-request chatter from the server libraries; their warnings and errors still show.
        for each in noisy:
            each.setLevel(max(numeric, logging.WARNING))
    try:
        yield
    finally:
        root.handlers = saved_handlers
        root.setLevel(saved_level)
        for each, saved in zip(noisy, saved_noisy, strict=True):
            each.setLevel(saved)


def show(value: object) -> None:
    """A JSON value: pretty on a terminal, one line of compact JSON when piped."""
    out = Console(soft_wrap=True)
    if out.is_terminal:
        out.print_json(data=value)
    else:
        sys.stdout.write(dumps_compact(value) + "\n")  # type: ignore[arg-type]  # an execute's value is JSON


def say(text: str) -> None:
    """Text for a person, as it is."""
    say_marked(escape(text))


def say_marked(markup: str) -> None:
    """Text for a person with rich markup (colour on a terminal, plain when piped); escape what is not ours."""
    Console(soft_wrap=True).print(markup, highlight=False)
