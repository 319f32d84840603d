"""The out-of-process sandbox wire: envelopes round-trip, and anything else a sandbox sends is bad-response."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from mycelium._values import MAX_JSON_DEPTH, JsonValue
from mycelium.failures import (
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
from mycelium.sandbox import SandboxRequest
from mycelium.sandbox._boundary import sandbox_failure_message
from mycelium.sandbox.wire import (
    MAX_FAILURE_TEXT_CHARS,
    MAX_NAME_CHARS,
    MAX_SANDBOX_MESSAGE_BYTES,
    MAX_WIRE_INT,
    SANDBOX_FAILURE_CODES,
    CallMessage,
    CallResultMessage,
    DoneMessage,
    FailedMessage,
    GuestError,
    LogMessage,
    SandboxMessage,
    StartMessage,
    decode_host_message,
    decode_sandbox_message,
    encode_host_message,
    encode_sandbox_message,
    reported_failure,
    start_message,
)

SANDBOX_MESSAGES: list[SandboxMessage] = [
    CallMessage(call_id=0, alias="demo", path="ping", input={}),
    CallMessage(call_id=7, alias="apps_bazaar", path="windows.open", input={"title": "ünïcode ✓", "n": [1, 2.5, None]}),
    CallMessage(call_id=MAX_WIRE_INT, alias="demo", path="echo", input="a bare string"),
    LogMessage(text="hello\nworld ✓"),
    LogMessage(text=""),
    DoneMessage(value={"total": 3, "items": [True, False, None, -1.5e-3, "x"]}),
    DoneMessage(value=None),
    FailedMessage(failure=SyntaxFailure(message="invalid syntax", line=3, column=7)),
    FailedMessage(failure=SyntaxFailure(message="unexpected EOF")),
    FailedMessage(failure=GuestException(type_name="KeyError", message="'x'", traceback="line 2, in <module>")),
    FailedMessage(failure=GuestException(type_name="ValueError", message="bad")),
    FailedMessage(failure=TransportLost()),
    FailedMessage(failure=DeadlineExceeded(timeout_ms=1_000, acknowledged=True)),
    FailedMessage(failure=Cancelled(acknowledged=False)),
    FailedMessage(failure=InvalidResult(reason="a set is not JSON")),
    FailedMessage(failure=ResultTooLarge(size=2_000_000, limit=1_000_000)),
    FailedMessage(failure=SandboxBusy(capacity=8, waited_ms=2_500)),
    FailedMessage(failure=Unknown()),
]


@pytest.mark.parametrize("message", SANDBOX_MESSAGES, ids=lambda m: f"{m.type}")
def test_every_sandbox_message_round_trips(message: SandboxMessage) -> None:
    encoded = encode_sandbox_message(message)
    assert decode_sandbox_message(encoded) == message
    assert decode_sandbox_message(encoded.decode("utf-8")) == message


def test_every_failure_a_sandbox_may_report_has_a_round_trip_case() -> None:
    covered = {m.failure.code for m in SANDBOX_MESSAGES if isinstance(m, FailedMessage)}
    assert covered == SANDBOX_FAILURE_CODES
    assert {"call", "log", "done", "failed"} == {m.type for m in SANDBOX_MESSAGES}


def test_a_failure_is_on_the_wire_in_its_to_dict_shape() -> None:
    failure = ResultTooLarge(size=5, limit=4)
    assert json.loads(encode_sandbox_message(FailedMessage(failure=failure))) == {
        "type": "failed",
        "failure": failure.to_dict(),
    }
    decoded = decode_sandbox_message(b'{"type":"failed","failure":{"code":"syntax","message":"m"}}')
    assert decoded == FailedMessage(failure=SyntaxFailure(message="m", line=None, column=None))


HOST_MESSAGES: list[StartMessage | CallResultMessage] = [
    StartMessage(execution_id="ex-1", code="return 1", timeout_ms=180_000, session_id=None, namespaces=[]),
    CallResultMessage(call_id=4, ok=True, value={"pong": "✓"}),
    CallResultMessage(call_id=5, ok=True, value=None),
    CallResultMessage(call_id=6, ok=False, error=GuestError(type_name="ValueError", message="bad input (ref r-1)")),
]


@pytest.mark.parametrize("message", HOST_MESSAGES, ids=lambda m: f"{m.type}")
def test_every_host_message_round_trips(message: StartMessage | CallResultMessage) -> None:
    assert decode_host_message(encode_host_message(message)) == message


def test_host_messages_are_compact_utf8_json() -> None:
    encoded = encode_host_message(CallResultMessage(call_id=1, ok=True, value={"k": "é"}))
    assert encoded == '{"type":"call-result","call_id":1,"ok":true,"value":{"k":"é"},"error":null}'.encode()


def test_a_malformed_host_message_is_a_value_error_for_the_sandbox() -> None:
    with pytest.raises(ValueError, match="malformed host message"):
        decode_host_message(b'{"type":"start"}')
    with pytest.raises(ValueError, match="Expecting value"):
        decode_host_message(b"not json")


@pytest.mark.parametrize(
    ("ok", "value", "error"),
    [
        (True, None, GuestError(type_name="ValueError", message="x")),
        (False, None, None),
        (False, 1, GuestError(type_name="ValueError", message="x")),
    ],
)
def test_a_call_result_is_a_value_or_an_error_never_both_nor_neither(
    ok: bool, value: JsonValue, error: GuestError | None
) -> None:
    with pytest.raises(ValidationError):
        CallResultMessage(call_id=1, ok=ok, value=value, error=error)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1: "int key"}, {1, 2}, b"bytes", object()])
def test_a_host_call_result_value_must_be_json(value: object) -> None:
    with pytest.raises(ValidationError):
        CallResultMessage(call_id=1, ok=True, value=value)  # type: ignore[arg-type]


def test_a_failure_built_in_python_must_fit_the_wire_bounds() -> None:
    with pytest.raises(ValidationError):
        FailedMessage(failure=SyntaxFailure(message="x" * (MAX_FAILURE_TEXT_CHARS + 1)))


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


_LONG = "x" * (MAX_FAILURE_TEXT_CHARS + 1)


def _failed(**failure: object) -> str:
    return json.dumps({"type": "failed", "failure": failure})


MALFORMED: list[tuple[str, object]] = [
    ("empty", b""),
    ("whitespace", b"   "),
    ("not json", b"hello"),
    ("truncated", b'{"type":"done","value":'),
    ("trailing garbage", b'{"type":"log","text":"x"} {}'),
    ("invalid utf-8", b'{"type":"log","text":"\xff"}'),
    ("utf-8 bom", b'\xef\xbb\xbf{"type":"log","text":"x"}'),
    ("utf-16", '{"type":"log","text":"x"}'.encode("utf-16")),
    ("lone surrogate text", '{"type":"log","text":"\ud800"}'),
    ("array", b"[]"),
    ("string", b'"done"'),
    ("null", b"null"),
    ("number", b"1"),
    ("no type", b'{"value":1}'),
    ("type not a string", b'{"type":1,"value":1}'),
    ("unknown type", b'{"type":"explode","value":1}'),
    ("host message type", b'{"type":"call-result","call_id":1,"ok":true,"value":1,"error":null}'),
    ("type wrong case", b'{"type":"DONE","value":1}'),
    ("missing value", b'{"type":"done"}'),
    ("extra field", b'{"type":"done","value":1,"extra":2}'),
    ("duplicate key", b'{"type":"done","value":1,"value":2}'),
    ("nan", b'{"type":"done","value":NaN}'),
    ("infinity", b'{"type":"done","value":[Infinity]}'),
    ("minus infinity", b'{"type":"done","value":-Infinity}'),
    ("overflowing float", b'{"type":"done","value":1e400}'),
    ("huge integer literal", b'{"type":"done","value":' + b"9" * 5_000 + b"}"),
    ("too deep for json", f'{{"type":"done","value":{_nested(100_000)}}}'.encode()),
    ("too deep for a value", f'{{"type":"done","value":{_nested(MAX_JSON_DEPTH + 1)}}}'.encode()),
    ("log text not a string", b'{"type":"log","text":5}'),
    ("call id negative", b'{"type":"call","call_id":-1,"alias":"a","path":"p","input":{}}'),
    ("call id a bool", b'{"type":"call","call_id":true,"alias":"a","path":"p","input":{}}'),
    ("call id a float", b'{"type":"call","call_id":1.0,"alias":"a","path":"p","input":{}}'),
    ("call id a string", b'{"type":"call","call_id":"1","alias":"a","path":"p","input":{}}'),
    ("call id too big", f'{{"type":"call","call_id":{MAX_WIRE_INT + 1},"alias":"a","path":"p","input":{{}}}}'.encode()),
    ("call without input", b'{"type":"call","call_id":1,"alias":"a","path":"p"}'),
    ("call with empty alias", b'{"type":"call","call_id":1,"alias":"","path":"p","input":{}}'),
    ("call with huge path", json.dumps({"type": "call", "call_id": 1, "alias": "a", "path": "p" * 1_001, "input": {}})),
    ("failure not an object", b'{"type":"failed","failure":"syntax"}'),
    ("failure without code", b'{"type":"failed","failure":{"message":"m"}}'),
    ("unknown failure code", b'{"type":"failed","failure":{"code":"meltdown"}}'),
    ("host-only capability-failed", _failed(code="capability-failed", module="m", operation="o", reference="r")),
    ("sandbox-busy with no slots", _failed(code="sandbox-busy", capacity=0, waited_ms=5)),
    ("sandbox-busy negative wait", _failed(code="sandbox-busy", capacity=2, waited_ms=-1)),
    ("sandbox-busy wait too big", _failed(code="sandbox-busy", capacity=2, waited_ms=MAX_WIRE_INT + 1)),
    ("sandbox-busy capacity too big", _failed(code="sandbox-busy", capacity=MAX_WIRE_INT + 1, waited_ms=5)),
    ("sandbox-busy capacity a string", _failed(code="sandbox-busy", capacity="2", waited_ms=5)),
    ("sandbox-busy wait a float", _failed(code="sandbox-busy", capacity=2, waited_ms=5.0)),
    ("sandbox-busy without wait", _failed(code="sandbox-busy", capacity=2)),
    ("sandbox-busy with a reason", _failed(code="sandbox-busy", capacity=2, waited_ms=5, reason="/srv/pool")),
    ("host-only invalid-arguments", b'{"type":"failed","failure":{"code":"invalid-arguments","message":"m"}}'),
    ("host-only bad-response", b'{"type":"failed","failure":{"code":"bad-response"}}'),
    ("failure missing field", b'{"type":"failed","failure":{"code":"result-too-large","size":5}}'),
    ("failure extra field", b'{"type":"failed","failure":{"code":"unknown","detail":"/etc/passwd"}}'),
    ("failure mistyped field", _failed(code="deadline-exceeded", timeout_ms="1", acknowledged=True)),
    ("failure bool as int", b'{"type":"failed","failure":{"code":"syntax","message":"m","line":true}}'),
    ("cancelled by someone else", _failed(code="cancelled", acknowledged=True, by="sandbox")),
    ("failure text too long", _failed(code="invalid-result", reason=_LONG)),
    ("traceback too long", _failed(code="guest-exception", type_name="E", message="m", traceback=_LONG)),
    ("oversized bytes", b'{"type":"log","text":"' + b"x" * MAX_SANDBOX_MESSAGE_BYTES + b'"}'),
    ("oversized text", '{"type":"log","text":"' + "x" * MAX_SANDBOX_MESSAGE_BYTES + '"}'),
    ("lone surrogate in a value", b'{"type":"done","value":{"k":"\\ud800"}}'),
    ("lone surrogate in a key", b'{"type":"done","value":{"\\uDC00":1}}'),
    ("lone surrogate in a log", b'{"type":"log","text":"a\\udfffb"}'),
    ("lone surrogate in a call", b'{"type":"call","call_id":0,"alias":"a","path":"p","input":{"q":"\\ud83d"}}'),
    ("lone surrogate as text", '{"type":"log","text":"\ud800"}'),
    ("not bytes or text", 12345),
    ("none", None),
]  # fmt: skip


@pytest.mark.parametrize("data", [data for _, data in MALFORMED], ids=[name for name, _ in MALFORMED])
def test_anything_malformed_oversized_or_unknown_decodes_to_bad_response(data: object) -> None:
    assert decode_sandbox_message(data) == BadResponse()  # type: ignore[arg-type]


def test_a_remote_pool_that_is_full_is_reported_as_sandbox_busy_contention_not_bad_response() -> None:
    decoded = decode_sandbox_message(b'{"type":"failed","failure":{"code":"sandbox-busy","capacity":4,"waited_ms":0}}')
    assert decoded == FailedMessage(failure=SandboxBusy(capacity=4, waited_ms=0))
    assert isinstance(decoded, FailedMessage)
    assert reported_failure(decoded, calls_made=0) == SandboxBusy(capacity=4, waited_ms=0)
    at_bounds = _failed(code="sandbox-busy", capacity=MAX_WIRE_INT, waited_ms=MAX_WIRE_INT)
    assert decode_sandbox_message(at_bounds) == FailedMessage(
        failure=SandboxBusy(capacity=MAX_WIRE_INT, waited_ms=MAX_WIRE_INT)
    )


def test_sandbox_busy_after_the_sandbox_made_a_call_is_a_false_claim_and_bad_response() -> None:
    busy = FailedMessage(failure=SandboxBusy(capacity=4, waited_ms=10))
    assert reported_failure(busy, calls_made=1) == BadResponse()
    # Every other failure may follow calls: the program ran, then failed.
    other = FailedMessage(failure=GuestException(type_name="ValueError", message="bad"))
    assert reported_failure(other, calls_made=3) == other.failure


def test_sandbox_busy_over_the_wire_reaches_the_model_as_a_retry_later_message() -> None:
    decoded = decode_sandbox_message(_failed(code="sandbox-busy", capacity=MAX_WIRE_INT, waited_ms=MAX_WIRE_INT))
    assert isinstance(decoded, FailedMessage)
    text = sandbox_failure_message(reported_failure(decoded, calls_made=0), "ref-1")
    assert "did not run" in text
    assert "Retry later" in text
    assert len(text) < 200


def test_the_size_bound_is_in_utf8_bytes_and_inclusive() -> None:
    message = '{"type":"log","text":"éé"}'
    size = len(message.encode("utf-8"))
    assert size > len(message)
    assert decode_sandbox_message(message, max_bytes=size) == LogMessage(text="éé")
    assert decode_sandbox_message(message.encode(), max_bytes=size) == LogMessage(text="éé")
    assert decode_sandbox_message(message, max_bytes=size - 1) == BadResponse()
    assert decode_sandbox_message(message.encode(), max_bytes=size - 1) == BadResponse()


@pytest.mark.parametrize("max_bytes", [0, -1, 1.5, True])
def test_a_nonsense_size_bound_is_the_hosts_error(max_bytes: object) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        decode_sandbox_message(b'{"type":"log","text":""}', max_bytes=max_bytes)  # type: ignore[arg-type]


def test_a_value_as_deep_as_the_json_limit_is_accepted() -> None:
    decoded = decode_sandbox_message(f'{{"type":"done","value":{_nested(MAX_JSON_DEPTH)}}}')
    assert isinstance(decoded, DoneMessage)


def test_text_fields_at_the_bound_are_accepted() -> None:
    at_bound = "x" * MAX_FAILURE_TEXT_CHARS
    decoded = decode_sandbox_message(json.dumps({"type": "failed", "failure": {"code": "syntax", "message": at_bound}}))
    assert decoded == FailedMessage(failure=SyntaxFailure(message=at_bound))
    path = "p" * MAX_NAME_CHARS
    decoded = decode_sandbox_message(json.dumps({"type": "call", "call_id": 1, "alias": "a", "path": path, "input": 1}))
    assert isinstance(decoded, CallMessage)
    assert decoded.path == path


async def _secret_callback_do_not_serialize(value: JsonValue) -> JsonValue:
    return value


def _request() -> SandboxRequest:
    return SandboxRequest(
        execution_id="ex-42",
        code="return await demo.ping()",
        timeout_ms=5_000,
        bindings={
            "demo": {"ping": _secret_callback_do_not_serialize, "echo.loud": _secret_callback_do_not_serialize},
            "apps_bazaar": {"windows.open": _secret_callback_do_not_serialize},
        },
        namespace_paths={"apps_bazaar": ("apps", "bazaar")},
        modules={"demo": "com.example.demo", "apps_bazaar": "com.example.bazaar", "quiet": "com.example.quiet"},
        session_id="session-1",
        on_log=print,
    )


def _leaves(value: object) -> Iterator[object]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from _leaves(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _leaves(child)
    else:
        yield value


def test_the_start_message_carries_no_callables_only_names_and_ids() -> None:
    message = start_message(_request())
    for dumped in (message.model_dump(), json.loads(encode_host_message(message))):
        for leaf in _leaves(dumped):
            assert leaf is None or type(leaf) in (str, int, bool), leaf
    encoded = encode_host_message(message)
    assert b"_secret_callback" not in encoded
    assert b"print" not in encoded
    assert set(json.loads(encoded)) == {"type", "execution_id", "code", "timeout_ms", "session_id", "namespaces"}


def test_the_start_message_keeps_aliases_module_ids_paths_and_operations() -> None:
    message = start_message(_request())
    assert message.execution_id == "ex-42"
    assert message.code == "return await demo.ping()"
    assert message.timeout_ms == 5_000
    assert message.session_id == "session-1"
    assert [(n.alias, n.module_id, n.path, n.operations) for n in message.namespaces] == [
        ("apps_bazaar", "com.example.bazaar", ["apps", "bazaar"], ["windows.open"]),
        ("demo", "com.example.demo", ["demo"], ["echo.loud", "ping"]),
        ("quiet", "com.example.quiet", ["quiet"], []),
    ]
    assert decode_host_message(encode_host_message(message)) == message


def test_a_bound_alias_without_a_module_id_is_refused() -> None:
    request = SandboxRequest(
        execution_id="ex",
        code="1",
        timeout_ms=1,
        bindings={"orphan": {"ping": _secret_callback_do_not_serialize}},
        namespace_paths={},
        modules={},
        session_id=None,
    )
    with pytest.raises(ValueError, match="orphan"):
        start_message(request)


_RESULT_TYPES = (CallMessage, LogMessage, DoneMessage, FailedMessage, BadResponse)


@given(st.binary(max_size=512) | st.text(max_size=512))
def test_arbitrary_bytes_or_text_decode_to_a_message_or_bad_response(data: bytes | str) -> None:
    assert isinstance(decode_sandbox_message(data), _RESULT_TYPES)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
_keys = st.sampled_from(["type", "call_id", "alias", "path", "input", "text", "value", "failure", "code", "message"])
_near_messages = st.dictionaries(
    _keys,
    st.sampled_from(["call", "log", "done", "failed", "syntax", "unknown", "cancelled"]) | _json_values,
    max_size=6,
)


@given(_near_messages)
def test_nearly_valid_messages_decode_to_a_message_or_bad_response(envelope: dict[str, object]) -> None:
    data = json.dumps(envelope, allow_nan=True)  # NaN and Infinity included on purpose
    assert isinstance(decode_sandbox_message(data), _RESULT_TYPES)
