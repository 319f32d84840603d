"""`model_output`: the one format every framework adapter gives the model."""

from __future__ import annotations

from mycelium import ToolResult
from mycelium._text import MAX_PRINTED_CHARS
from mycelium.integrations import model_output


def test_the_model_reads_the_result_then_what_the_program_printed() -> None:
    result = ToolResult(text='{"n":1}', is_error=False, logs=("one", "two"))
    assert model_output(result) == '{"n":1}\n\nPrinted:\none\ntwo'
    assert model_output(ToolResult(text="1", is_error=False)) == "1"


def test_print_output_past_the_bound_is_cut_and_the_cut_is_said() -> None:
    # A run paused and resumed several times carries every part's output: the model reads a bounded amount.
    parts = tuple("x" * 10_000 for _ in range(5))
    text = model_output(ToolResult(text="1", is_error=False, logs=parts))
    printed = text.split("\n\nPrinted:\n", 1)[1]
    total = 5 * 10_000 + 4  # the lines and the newlines between them
    assert printed.endswith(f"\n... ({total - MAX_PRINTED_CHARS} more characters cut)")
    assert len(printed) < MAX_PRINTED_CHARS + 100
