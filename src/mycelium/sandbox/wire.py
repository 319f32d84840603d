"""The JSON envelopes an out-of-process sandbox exchanges with the host.

A sandbox that runs in another process (a worker, a container, a remote service)
cannot receive a :class:`~mycelium.sandbox.SandboxRequest`: its bindings are host
callables. The host sends it a :class:`StartMessage` that carries only names and ids
(the code, the limits, and for every transport alias its logical path, module id and
operation names); the sandbox asks the host to run an operation with a
:class:`CallMessage`, and the host answers with a :class:`CallResultMessage`. The
sandbox reports printed output with :class:`LogMessage` and ends the run with
:class:`DoneMessage` or :class:`FailedMessage`.

It is for people who put a sandbox in another process: the provider (the process that
runs programs) and the host-side :class:`~mycelium.sandbox.Sandbox` that talks to it.
The library's own Monty sandbox does not use it. How messages are framed on a stream is
the transport's choice; ``tests/support/wire_provider.py`` and ``wire_sandbox.py`` are
both sides of one, a line per message, exercised through a real runtime.

Host callbacks are never guest data: nothing here can hold one, and
:func:`start_message` reads only the names of the request's bindings. Namespace
metadata carries no credentials: aliases, logical paths, module ids and operation
names are all it has.

Everything a sandbox sends is untrusted. :func:`decode_sandbox_message` turns any
malformed, oversized, non-JSON, too deeply nested or unknown message into
:class:`~mycelium.failures.BadResponse` and never raises.

A sandbox may report ``sandbox-busy``: a remote pool that is full is contention, as
the host's own admission is, not a malformed reply. Its facts are the pool's
``capacity`` (at least one slot) and ``waited_ms``, both bounded like every count. It
means the program never started, so it is believable only before the sandbox made
any call: :func:`reported_failure` turns a later one into ``bad-response``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from .._values import JsonValue, check_json, dumps_compact, unique_keys
from ..failures import (
    BadResponse,
    Cancelled,
    DeadlineExceeded,
    GuestException,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    SyntaxFailure,
    TransportLost,
    Unknown,
)
from ._contract import SandboxRequest

__all__ = [
    "MAX_FAILURE_TEXT_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SANDBOX_MESSAGE_BYTES",
    "MAX_WIRE_INT",
    "SANDBOX_FAILURE_CODES",
    "CallMessage",
    "CallResultMessage",
    "DoneMessage",
    "FailedMessage",
    "GuestError",
    "HostMessage",
    "LogMessage",
    "NamespaceInfo",
    "SandboxFailure",
    "SandboxMessage",
    "StartMessage",
    "decode_host_message",
    "decode_sandbox_message",
    "decode_untrusted",
    "encode_host_message",
    "encode_sandbox_message",
    "reported_failure",
    "start_message",
]

_T = TypeVar("_T")

MAX_SANDBOX_MESSAGE_BYTES = 1_048_576
"""The default bound on one encoded sandbox message (1 MiB), checked before parsing."""
MAX_FAILURE_TEXT_CHARS = 4_000
"""The bound on every text field of a reported failure; a sandbox clips its own text."""
MAX_NAME_CHARS = 1_000
"""The bound on the alias and the operation path of a call."""
MAX_WIRE_INT = 2**53 - 1
"""The largest integer in an envelope field: exactly representable in every JSON reader."""

if TYPE_CHECKING:
    WireJson: TypeAlias = JsonValue
else:

    def _checked_json(value: object) -> object:
        check_json(value)  # NotJson is a ValueError: pydantic reports it as a validation error
        return value

    # Validated by check_json, not rebuilt by pydantic: the value is kept exactly as given.
    WireJson = Annotated[Any, AfterValidator(_checked_json)]

_Text = Annotated[str, Field(max_length=MAX_FAILURE_TEXT_CHARS)]
_Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
_Count = Annotated[int, Field(ge=0, le=MAX_WIRE_INT)]


class _Envelope(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# --- host -> sandbox -------------------------------------------------------------------


class NamespaceInfo(_Envelope):
    """One transport alias as the sandbox sees it: names and ids only."""

    alias: str
    """The flat transport alias that a :class:`CallMessage` names."""
    path: list[str]
    """The logical path in the guest's ``env`` (``["apps", "bazaar"]``)."""
    module_id: str
    """The stable module id, for the sandbox's own diagnostics."""
    operations: list[str]
    """Relative dotted operation paths, sorted."""


class StartMessage(_Envelope):
    """Start one execute. Sent once, first."""

    type: Literal["start"] = "start"
    execution_id: str
    code: str
    timeout_ms: _Count
    session_id: str | None
    namespaces: list[NamespaceInfo]


class GuestError(_Envelope):
    """A failed operation as the guest sees it: an exception type and a safe message."""

    type_name: str
    message: str


class CallResultMessage(_Envelope):
    """The answer to one :class:`CallMessage`: a JSON value, or a guest-visible error."""

    type: Literal["call-result"] = "call-result"
    call_id: _Count
    ok: bool
    value: WireJson | None = None
    error: GuestError | None = None

    @model_validator(mode="after")
    def _value_or_error(self) -> CallResultMessage:
        if self.ok and self.error is not None:
            raise ValueError("a successful call result carries no error")
        if not self.ok and (self.error is None or self.value is not None):
            raise ValueError("a failed call result carries an error and no value")
        return self


HostMessage: TypeAlias = StartMessage | CallResultMessage


def start_message(request: SandboxRequest) -> StartMessage:
    """The start envelope for ``request``: names and ids only, never a callback.

    Every alias in the request's bindings or modules becomes one :class:`NamespaceInfo`,
    sorted by alias. Raises ``ValueError`` for a bound alias with no module id.
    """
    namespaces: list[NamespaceInfo] = []
    for alias in sorted({*request.bindings, *request.modules}):
        if alias not in request.modules:
            raise ValueError(f"transport alias {alias!r} has bindings but no module id")
        namespaces.append(
            NamespaceInfo(
                alias=alias,
                path=list(request.namespace_paths.get(alias, (alias,))),
                module_id=request.modules[alias],
                operations=sorted(request.bindings.get(alias, {})),
            )
        )
    return StartMessage(
        execution_id=request.execution_id,
        code=request.code,
        timeout_ms=request.timeout_ms,
        session_id=request.session_id,
        namespaces=namespaces,
    )


# --- sandbox -> host -------------------------------------------------------------------


class CallMessage(_Envelope):
    """The guest called an operation. ``call_id`` pairs it with its result."""

    type: Literal["call"] = "call"
    call_id: _Count
    alias: _Name
    path: _Name
    """The relative dotted operation path inside the alias (``windows.open``)."""
    input: WireJson


class LogMessage(_Envelope):
    """Printed output of the program (bounded by the sandbox; never part of the value)."""

    type: Literal["log"] = "log"
    text: str


class DoneMessage(_Envelope):
    """The program finished with this JSON value."""

    type: Literal["done"] = "done"
    value: WireJson


SandboxFailure: TypeAlias = (
    SyntaxFailure
    | GuestException
    | TransportLost
    | DeadlineExceeded
    | Cancelled
    | InvalidResult
    | ResultTooLarge
    | SandboxBusy
    | Unknown
)
"""The failures a sandbox may report, its own full pool (``sandbox-busy``) included. The
others are the host's to decide: a sandbox cannot claim a host operation failed
(``capability-failed``), that the tool call was malformed, or that it itself misbehaved."""


class _SyntaxPayload(_Envelope):
    code: Literal["syntax"]
    message: _Text
    line: _Count | None = None
    column: _Count | None = None
    type_check: bool = False


class _GuestExceptionPayload(_Envelope):
    code: Literal["guest-exception"]
    type_name: _Text
    message: _Text
    traceback: _Text | None = None


class _TransportLostPayload(_Envelope):
    code: Literal["transport-lost"]


class _DeadlineExceededPayload(_Envelope):
    code: Literal["deadline-exceeded"]
    timeout_ms: _Count
    acknowledged: bool


class _CancelledPayload(_Envelope):
    code: Literal["cancelled"]
    acknowledged: bool
    by: Literal["caller"] = "caller"


class _InvalidResultPayload(_Envelope):
    code: Literal["invalid-result"]
    reason: _Text


class _ResultTooLargePayload(_Envelope):
    code: Literal["result-too-large"]
    size: _Count
    limit: _Count


class _SandboxBusyPayload(_Envelope):
    code: Literal["sandbox-busy"]
    capacity: Annotated[int, Field(ge=1, le=MAX_WIRE_INT)]
    waited_ms: _Count


class _UnknownPayload(_Envelope):
    code: Literal["unknown"]


_FAILURE_CLASSES = (
    SyntaxFailure,
    GuestException,
    TransportLost,
    DeadlineExceeded,
    Cancelled,
    InvalidResult,
    ResultTooLarge,
    SandboxBusy,
    Unknown,
)
_FAILURE_TYPES: dict[str, type[SandboxFailure]] = {failure.code: failure for failure in _FAILURE_CLASSES}
SANDBOX_FAILURE_CODES = frozenset(_FAILURE_TYPES)
"""The ``code`` of every failure a sandbox may report."""

_FailurePayload: TypeAlias = (
    _SyntaxPayload
    | _GuestExceptionPayload
    | _TransportLostPayload
    | _DeadlineExceededPayload
    | _CancelledPayload
    | _InvalidResultPayload
    | _ResultTooLargePayload
    | _SandboxBusyPayload
    | _UnknownPayload
)
_FAILURE_PAYLOAD: TypeAdapter[_FailurePayload] = TypeAdapter(Annotated[_FailurePayload, Field(discriminator="code")])


class FailedMessage(_Envelope):
    """The program failed. On the wire ``failure`` is ``{"code": ..., **fields}``."""

    type: Literal["failed"] = "failed"
    failure: SandboxFailure

    @field_validator("failure", mode="plain")
    @classmethod
    def _decode_failure(cls, value: object) -> SandboxFailure:
        if isinstance(value, _FAILURE_CLASSES):
            # A failure built in Python still obeys the wire's bounds, so it always round-trips.
            _FAILURE_PAYLOAD.validate_python(value.to_dict())
            return value
        payload = _FAILURE_PAYLOAD.validate_python(value)
        return _FAILURE_TYPES[payload.code](**payload.model_dump(exclude={"code"}))

    @field_serializer("failure")
    def _encode_failure(self, failure: SandboxFailure) -> dict[str, object]:
        return failure.to_dict()


SandboxMessage: TypeAlias = CallMessage | LogMessage | DoneMessage | FailedMessage

_SANDBOX_MESSAGE: TypeAdapter[SandboxMessage] = TypeAdapter(Annotated[SandboxMessage, Field(discriminator="type")])
_HOST_MESSAGE: TypeAdapter[HostMessage] = TypeAdapter(Annotated[HostMessage, Field(discriminator="type")])


# --- coding ----------------------------------------------------------------------------


def decode_sandbox_message(
    data: bytes | str, *, max_bytes: int = MAX_SANDBOX_MESSAGE_BYTES
) -> CallMessage | LogMessage | DoneMessage | FailedMessage | BadResponse:
    """Decode one message from a sandbox, or :class:`BadResponse` for anything else.

    ``data`` is one UTF-8 JSON document of at most ``max_bytes`` bytes (checked before
    parsing). Malformed JSON, duplicate keys, ``NaN``/``Infinity``, a lone surrogate, nesting deeper than
    :data:`~mycelium._values.MAX_JSON_DEPTH`, an unknown ``type`` or failure ``code``, a
    missing, extra, mistyped or out-of-bounds field: all are :class:`BadResponse`. It
    never raises for what the sandbox sent; only a ``max_bytes`` that is not a positive
    int raises ``ValueError``.
    """
    return decode_untrusted(_SANDBOX_MESSAGE, data, max_bytes=max_bytes)


def decode_untrusted(adapter: TypeAdapter[_T], data: bytes | str, *, max_bytes: int) -> _T | BadResponse:
    """``data`` validated by ``adapter``, or :class:`BadResponse`, under the rules of
    :func:`decode_sandbox_message` (for a transport with envelopes of its own); never raises
    for what was sent, only for a ``max_bytes`` that is not a positive int."""
    if type(max_bytes) is not int or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")
    try:
        text = _bounded_text(data, max_bytes)
        if text is None:
            return BadResponse()
        decoded = _load_json(text)
        if ("\\ud" in text or "\\uD" in text) and not _unicode(decoded):
            return BadResponse()  # an escaped lone surrogate: not text any UTF-8 reader can take on
        return adapter.validate_python(decoded)
    except (ValueError, RecursionError):
        # ValueError covers JSON syntax, undecodable UTF-8, over-long integers, NaN,
        # duplicate keys and pydantic's ValidationError; RecursionError is deep nesting.
        return BadResponse()


def reported_failure(message: FailedMessage, *, calls_made: int) -> SandboxFailure | BadResponse:
    """The failure a run ends with, checked against how many operation calls the sandbox made.

    ``sandbox-busy`` says the program never started; after a call it is false, and a host
    whose sandbox lies about what ran cannot tell the model what did: ``bad-response``.
    """
    if isinstance(message.failure, SandboxBusy) and calls_made > 0:
        return BadResponse()
    return message.failure


def decode_host_message(data: bytes | str) -> StartMessage | CallResultMessage:
    """Decode one message from the host (for a sandbox worker). Raises ``ValueError`` if malformed."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return _HOST_MESSAGE.validate_python(_load_json(text))
    except ValidationError as exc:
        raise ValueError(f"malformed host message: {exc.error_count()} validation error(s)") from None
    except RecursionError:
        raise ValueError("malformed host message: nested too deeply") from None


def encode_host_message(message: StartMessage | CallResultMessage) -> bytes:
    """``message`` as compact UTF-8 JSON."""
    return _encode(message)


def encode_sandbox_message(message: CallMessage | LogMessage | DoneMessage | FailedMessage) -> bytes:
    """``message`` as compact UTF-8 JSON (for a sandbox worker, and for tests)."""
    return _encode(message)


def _encode(message: BaseModel) -> bytes:
    # model_dump (not model_dump_json): values stay exactly as checked, and a non-finite
    # float slipped into a mutable value after construction raises instead of becoming null.
    return dumps_compact(message.model_dump(mode="python")).encode("utf-8")


def _bounded_text(data: object, max_bytes: int) -> str | None:
    """``data`` as text if it is at most ``max_bytes`` of valid UTF-8, else ``None``."""
    if isinstance(data, bytes):
        return data.decode("utf-8") if len(data) <= max_bytes else None
    if isinstance(data, str):
        # Every character is at least one byte, so the length rules out most oversized text cheaply.
        if len(data) > max_bytes or len(data.encode("utf-8")) > max_bytes:
            return None
        return data
    return None


def _load_json(text: str) -> object:
    return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=unique_keys)


def _unicode(decoded: object) -> bool:
    """Whether every string in ``decoded`` is Unicode text (no lone surrogate from a ``\\ud800`` escape)."""
    try:
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")
