"""An out-of-process sandbox provider speaking :mod:`mycelium.sandbox.wire` on stdin/stdout.

Run as ``python -m tests.support.wire_provider``. One execute per process: it reads a
start message, runs the program, and ends with a done or failed message. Messages are
compact JSON, one per line (compact JSON never holds a newline).

Its guest language is deliberately tiny, so the tests exercise the wire and not an
interpreter: each non-empty line of the program is a JSON array, one step.

- ``["print", text]`` or ``["print", text, times]``: report printed output (``times`` lines of it).
- ``["call", name, input]``: call the operation ``name`` (its logical dotted path, as
  ``notes.search`` or ``apps.bazaar.windows.open``, found through the start message's
  namespaces); its value becomes the last value. A failed call, or a name no namespace
  has, ends the run with a guest exception (nothing catches it).
- ``["return", value]`` / ``["return-last"]``: end the run with a value.
- ``["return-answer"]``: end the run with the host's next message, as JSON (the answer to a ``send``).
- ``["fail", failure]``: end the run with ``failure`` (``{"code": ..., **fields}``).
- ``["send", text]``: write ``text`` as a line of its own, whatever it is (a hostile provider).
- ``["flood", size]``: write a line of ``size`` bytes (a provider that floods the host).
- ``["return-sized", size]``: end the run with a string, in a done message of exactly ``size`` bytes.
- ``["hang"]``: wait for stdin to close (a provider that never finishes).
- ``["exit"]``: stop without a word (a provider that crashed).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from mycelium import JsonValue
from mycelium.failures import GuestException, SyntaxFailure
from mycelium.sandbox.wire import (
    CallMessage,
    CallResultMessage,
    DoneMessage,
    FailedMessage,
    LogMessage,
    StartMessage,
    decode_host_message,
    encode_sandbox_message,
)


def _send(message: CallMessage | LogMessage | DoneMessage | FailedMessage) -> None:
    _write(encode_sandbox_message(message).decode("utf-8"))


def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _receive() -> CallResultMessage:
    message = decode_host_message(sys.stdin.readline())
    if not isinstance(message, CallResultMessage):
        raise ValueError("expected a call result")
    return message


def _steps(code: str) -> list[list[Any]] | FailedMessage:
    steps = []
    for number, line in enumerate(code.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            step = json.loads(line)
        except ValueError as exc:
            return FailedMessage(failure=SyntaxFailure(message=str(exc)[:200], line=number, column=None))
        if not isinstance(step, list) or not step or not isinstance(step[0], str):
            return FailedMessage(failure=SyntaxFailure(message="a step is a JSON array", line=number, column=None))
        steps.append(step)
    return steps


def _address(start: StartMessage, name: str) -> tuple[str, str] | None:
    """The transport alias and relative operation path of a logical dotted name."""
    for namespace in start.namespaces:
        prefix = ".".join(namespace.path) + "."
        relative = name.removeprefix(prefix)
        if name.startswith(prefix) and relative in namespace.operations:
            return namespace.alias, relative
    return None


def run(start: StartMessage) -> None:
    steps = _steps(start.code)
    if isinstance(steps, FailedMessage):
        _send(steps)
        return
    last: JsonValue = None
    for call_id, (verb, *args) in enumerate(steps):
        match verb:
            case "print":
                for _ in range(args[1] if len(args) > 1 else 1):
                    _send(LogMessage(text=args[0]))
            case "call":
                name, value = args
                address = _address(start, name)
                if address is None:
                    _send(FailedMessage(failure=GuestException(type_name="AttributeError", message=name)))
                    return
                alias, path = address
                _send(CallMessage(call_id=call_id, alias=alias, path=path, input=value))
                result = _receive()
                if result.error is not None:
                    failure = GuestException(type_name=result.error.type_name, message=result.error.message)
                    _send(FailedMessage(failure=failure))
                    return
                last = result.value
            case "return":
                _send(DoneMessage(value=args[0]))
                return
            case "return-last":
                _send(DoneMessage(value=last))
                return
            case "return-answer":
                _send(DoneMessage(value=_receive().model_dump(mode="json")))
                return
            case "fail":
                _write(json.dumps({"type": "failed", "failure": args[0]}))
                return
            case "send":
                _write(args[0])
            case "flood":
                _write("x" * args[0])
            case "return-sized":
                empty = encode_sandbox_message(DoneMessage(value=""))
                _write(empty.decode().replace('""', '"' + "x" * (args[0] - len(empty)) + '"'))
                return
            case "hang":
                sys.stdin.read()
                return
            case "exit":
                raise SystemExit(3)
    _send(DoneMessage(value=None))


def main() -> None:
    start = decode_host_message(sys.stdin.readline())
    if not isinstance(start, StartMessage):
        raise SystemExit("the first message must be a start message")
    run(start)


if __name__ == "__main__":
    main()
