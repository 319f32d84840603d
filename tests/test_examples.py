"""The examples a newcomer runs first must keep doing what the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_prints_exactly_pong() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == '{"value":"pong"}\n'


def test_notes_app_runs_model_style_code_in_monty_and_prints_its_summary() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "notes_app.py")], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "[guest] 3 notes across 2 projects",
        '{"projects":[{"project":"party","notes":1,"next_event":"venue visit"},'
        '{"project":"rocket","notes":2,"next_event":"static fire"}]}',
    ]


async def test_closing_the_runtime_lets_the_interpreter_exit_cleanly_every_time() -> None:
    # Monty's pool can abort the interpreter at exit (code 134) when the loop ends right
    # after the pool closes; run the quick start repeatedly to catch it.
    import anyio

    results: list[int] = []

    async def once() -> None:
        completed = await anyio.run_process([sys.executable, str(EXAMPLES / "quickstart.py")], check=False)
        results.append(completed.returncode)

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(once)
    assert results == [0] * 8


def test_computer_source_example_keeps_computer_a_for_the_first_lease() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "computer_source.py")], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "acquired Computer A",
        'L1 revision 1: {"computer":"Computer A"}',
        "host switches to Computer B",
        "acquired Computer B",
        'L2 revision 2: {"computer":"Computer B"}',
        'L1 revision 1: {"computer":"Computer A"}',
        "releasing L1",
        "released Computer A",
        "released Computer B",
        "runtime closed",
    ]
