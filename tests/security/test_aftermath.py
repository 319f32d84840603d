"""After the whole attack, on one runtime: the next ordinary execute succeeds and nothing is left behind.

This test replays every adversarial program of the suite on a single runtime, then runs
an ordinary program on that same runtime, closes it, and checks that no worker process
and no asyncio task remains. It runs on an event loop of its own (in a thread), so
"no task besides the current one" is exact, with no test-runner task to allow for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from contextlib import AsyncExitStack

import anyio
import pytest

from .conftest import (
    ORDINARY_PROGRAM,
    ORDINARY_TEXT,
    STOP_BOUND_S,
    Host,
    HostState,
    Outcome,
    child_pids,
    wait_for_no_new_children,
)
from .test_adversarial import (
    BAD_ARGUMENTS,
    BUILTIN_ESCAPES,
    CPU_BURNERS,
    DEEP_RETURNS,
    ENV_READS,
    EXITS,
    FILE_READS,
    FORBIDDEN_MODULES,
    FORGED_LIMITS,
    HARMLESS_REPRS,
    HUGE_RESULTS,
    IDENTITY_SPOOFS,
    INTROSPECTION,
    MEMORY_BOMBS,
    NESTED_SOURCES,
    NON_JSON_RESULTS,
    OS_ESCAPES,
    RECURSIONS,
    SLEEP_FOREVER,
    SLEEP_LOOPS,
)

QUICK_PROGRAMS: list[str] = [
    *MEMORY_BOMBS.values(),
    *RECURSIONS.values(),
    *NESTED_SOURCES.values(),
    *DEEP_RETURNS.values(),
    *(f"import {module}" for module in FORBIDDEN_MODULES),
    *OS_ESCAPES.values(),
    *BUILTIN_ESCAPES.values(),
    *INTROSPECTION.values(),
    *HARMLESS_REPRS.values(),
    *FILE_READS.values(),
    *ENV_READS.values(),
    *HUGE_RESULTS.values(),
    *NON_JSON_RESULTS.values(),
    *(code for code, _ in BAD_ARGUMENTS.values()),
    *IDENTITY_SPOOFS.values(),
    *SLEEP_FOREVER.values(),
    *SLEEP_LOOPS.values(),
    *(code for code, _ in EXITS.values()),
    *(code for code, _ in FORGED_LIMITS.values()),
    "import json\njson.loads('[' * 200000 + ']' * 200000)",
    "locals()",
    "def f():\n    pass\nf",
    "x = []\nx.append(x)\nreturn x",
    "x = notes.hang()\nreturn x",
    "notes.hang()\nreturn 1",
    "for i in range(1000):\n    await notes.search(query='a')",
    "import asyncio\nawait asyncio.gather(*[notes.search(query='a') for _ in range(1000)])",
    "await notes.explode()",
    "try:\n    await notes.explode()\nexcept Exception as e:\n    return str(e)",
    "for i in range(100000):\n    print('x' * 100)",
    "raise ValueError('x' * 1_000_000)",
    "x = 1\ndef (:\n    pass",
]
CONCURRENT_BURNERS = [CPU_BURNERS["while-true-pass"], CPU_BURNERS["huge-power"], "return await notes.hang()"]


async def attack_then_check(state: HostState) -> None:
    async with AsyncExitStack() as running:
        host = Host(state=state, running=running)
        runtime = await host.open(sandbox_capacity=4, pool_size=4)
        children_before = child_pids()
        burned: list[Outcome] = []

        async def burn(code: str) -> None:
            burned.append(await host.run(code, runtime))

        async with anyio.create_task_group() as group:
            for code in CONCURRENT_BURNERS:
                group.start_soon(burn, code)
        assert [outcome.code for outcome in burned] == ["deadline-exceeded"] * len(CONCURRENT_BURNERS)

        for code in QUICK_PROGRAMS:
            outcome = await host.run(code, runtime)
            assert outcome.elapsed < STOP_BOUND_S, code
            assert outcome.code != "unknown", code
            assert state.hang_running == 0, code

        ordinary = await host.run(ORDINARY_PROGRAM, runtime)
        assert ordinary.result.text == ORDINARY_TEXT, "the runtime was harmed by the attack"

        with anyio.fail_after(30):
            await runtime.close()
    left = await wait_for_no_new_children(children_before)
    assert not left, f"worker processes left behind after the runtime closed: {sorted(left)}"
    assert asyncio.all_tasks() == {asyncio.current_task()}, "asyncio tasks left behind"
    assert state.hang_running == 0
    assert state.hang_cancelled == state.hang_started


def test_after_every_attack_the_next_ordinary_execute_succeeds_and_no_worker_or_task_is_left(
    env_secret: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")

    async def main() -> None:
        state = HostState(env_secret=env_secret, op_secret=f"op-secret-{uuid.uuid4().hex}", gate=anyio.Event())
        await attack_then_check(state)

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, main).result(timeout=120)
    assert env_secret not in caplog.text
