"""A stdio server's output cut into lines: the same lines however the bytes are split, a long one cut and counted.

And the id a cut line still shows at its ends, in the orders real SDKs write, but never
one taken from a request of the server's or from the middle of a line.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from mycelium.mcp._upstream._lines import _answered_id, _Cut, _LineSplitter, _Skipped

LIMIT = 64


def split(data: bytes, cuts: list[int], limit: int = LIMIT) -> list[bytes | _Cut | _Skipped]:
    """Feed ``data`` to a splitter in pieces ending at ``cuts``; everything it found."""
    splitter = _LineSplitter(limit)
    found: list[bytes | _Cut | _Skipped] = []
    start = 0
    for end in [*sorted(cuts), len(data)]:
        found += splitter.feed(data[start:end])
        start = max(start, end)
    return found


lines = st.lists(st.binary(max_size=3 * LIMIT).map(lambda line: line.replace(b"\n", b"")), max_size=8)


@given(lines, st.lists(st.integers(min_value=0, max_value=2_000), max_size=12))
# A cut line shorter than the ends kept of it, after another line in the same piece: its ends
# were once taken from the buffer, the newline and the line before included.
@example([b"", bytes(LIMIT + 1)], [])
@example([bytes(LIMIT + 1)], [])
def test_lines_are_found_whole_however_the_bytes_arrive_and_a_long_one_is_cut_and_counted(
    given_lines: list[bytes], cuts: list[int]
) -> None:
    data = b"".join(line + b"\n" for line in given_lines)
    found = split(data, [cut % (len(data) + 1) for cut in cuts])
    expected: list[object] = []
    for line in given_lines:
        expected += [line] if len(line) <= LIMIT else ["cut", ("skipped", line[-512:], len(line))]
    # How much of a long line's start is kept depends on how it arrived; its size and its end do not.
    assert [shown(item) for item in found] == expected
    twice = [line for line in given_lines if len(line) > LIMIT for _ in ("cut", "skipped")]
    heads = [item.head for item in found if isinstance(item, _Cut | _Skipped)]
    assert all(line.startswith(head) and len(head) > LIMIT for head, line in zip(heads, twice, strict=True))


def shown(item: bytes | _Cut | _Skipped) -> object:
    if isinstance(item, _Cut):
        return "cut"
    if isinstance(item, _Skipped):
        return ("skipped", item.tail, item.size)
    return item


def test_a_line_passing_the_bound_is_cut_before_it_ends_and_its_rest_is_only_counted() -> None:
    splitter = _LineSplitter(LIMIT)
    assert splitter.feed(b"a" * (LIMIT + 1)) == [_Cut(b"a" * (LIMIT + 1))]
    assert splitter.feed(b"b" * 10_000) == []  # dropped as it comes
    (skipped,) = splitter.feed(b"c\nnext\n")[:1]
    assert skipped == _Skipped(b"a" * (LIMIT + 1), (b"b" * 10_000 + b"c")[-512:], LIMIT + 1 + 10_001)
    assert splitter.feed(b"after\n") == [b"after"]


def test_a_line_of_exactly_the_bound_is_kept() -> None:
    assert split(b"x" * LIMIT + b"\n", []) == [b"x" * LIMIT]


def test_the_id_of_an_answer_is_read_first_in_the_python_sdks_order_and_last_in_the_typescript_sdks() -> None:
    assert _answered_id(b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xx') == 7
    assert _answered_id(b'{ "jsonrpc": "2.0", "id": "call-7", "error": {"code": 1, "message": "xx') == "call-7"
    assert _answered_id(b'{"result":{"content":[', b'xxxx"}]},"jsonrpc":"2.0","id":7}') == 7
    assert _answered_id(b'{"result":{"content":[', b'xxxx"}]},"id":7,"jsonrpc":"2.0"}\r') == 7


def test_no_id_is_read_from_a_request_of_the_servers_or_from_the_middle_of_an_answer() -> None:
    request = b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"xx'
    assert _answered_id(request, b'xx"}}') is None
    assert _answered_id(b'{"method":"sampling/createMessage","params":{"x":"', b'xx"},"jsonrpc":"2.0","id":7}') is None
    # Not at the end of the whole message: an "id" inside the result closes more than one object.
    assert _answered_id(b'{"jsonrpc":"2.0","result":{"items":[', b'xx",{"id":7}]}}') is None
    assert _answered_id(b'{"result":{"items":[', b'{"id":7}]},"jsonrpc":"2.0"}') is None
    assert _answered_id(b'{"result":{"content":[]},"padding":"xxxx') is None  # the end is not known yet
    assert _answered_id(b'{"jsonrpc":"2.0","id":007,"result":{') is None  # not JSON
