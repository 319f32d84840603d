"""Reading and writing pauses never holds a serving loop for long.

Every record is sealed in a worker thread, and a large one (a big paused state, many printed
lines, a many-keyed argument) is unsealed there too; a listing or a replay lookup that
unseals several records lets other tasks run between them. What is checked is where the work runs and that other
tasks get turns, never how long anything took.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import pytest

from mycelium import MemorySuspensions, Suspensions
from mycelium.suspensions._records import PausedCall, SuspensionRecord
from mycelium.suspensions._suspensions import UNSEAL_ON_LOOP_BYTES
from tests.support.turns import turns_during

KEY = b"a key of at least sixteen bytes"


def record(
    number: int = 0, *, code: str = "return 1", logs: tuple[str, ...] = (), arguments: object = None, state: bytes = b""
) -> SuspensionRecord:
    now = time.time()
    call = PausedCall(
        call=1,
        module_id="crm",
        operation="delete",
        path="crm.delete",
        access="write",
        arguments=arguments if arguments is not None else {"id": number},
        ordinal=1,
    )
    return SuspensionRecord(
        id=f"susp-{number}",
        session_id="session",
        tool_call_id="tool-call",
        execution_id=f"execution-{number}",
        code=code,
        created_at=now,
        expires_at=now + 3600,
        spent_ms=0,
        next_ordinal=2,
        sources={},
        modules={"crm": "digest"},
        calls=(call,),
        logs=logs,
        state=state,
    )


LARGE = {
    "a large state": record(state=bytes(UNSEAL_ON_LOOP_BYTES + 1)),
    "many printed lines": record(logs=("",) * UNSEAL_ON_LOOP_BYTES),
    "a many-keyed argument": record(arguments={str(key): key for key in range(UNSEAL_ON_LOOP_BYTES // 4)}),
    "a long program": record(code="#" * UNSEAL_ON_LOOP_BYTES),
    "printed lines that are not ASCII": record(logs=("\N{SNOWMAN}" * 100,) * (UNSEAL_ON_LOOP_BYTES // 500)),
    "many deferred calls": dataclasses.replace(record(), calls=record().calls * (UNSEAL_ON_LOOP_BYTES // 100)),
}


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[threading.Thread]]:
    """The threads each of ``Suspensions._seal`` and ``._unseal`` ran in."""
    seen: dict[str, list[threading.Thread]] = {"_seal": [], "_unseal": []}
    for name, ran_in in seen.items():
        original: Callable[..., object] = getattr(Suspensions, name)

        def watched(
            *args: object, _original: Callable[..., object] = original, _ran_in: list[threading.Thread] = ran_in
        ) -> object:
            _ran_in.append(threading.current_thread())
            return _original(*args)

        monkeypatch.setattr(Suspensions, name, watched)
    return seen


@pytest.mark.parametrize("large", LARGE.values(), ids=LARGE.keys())
async def test_a_large_record_is_sealed_and_unsealed_off_the_event_loop(
    large: SuspensionRecord, threads: dict[str, list[threading.Thread]]
) -> None:
    suspensions = Suspensions(key=KEY)
    sealed = await suspensions.seal(large)
    assert await suspensions.unseal(sealed) == large
    loop_thread = threading.current_thread()
    assert [thread is loop_thread for thread in threads["_seal"] + threads["_unseal"]] == [False, False]


async def test_even_a_small_record_is_sealed_off_the_event_loop(threads: dict[str, list[threading.Thread]]) -> None:
    await Suspensions(key=KEY).seal(record())
    assert [thread is threading.current_thread() for thread in threads["_seal"]] == [False]


async def test_an_approvals_listing_lets_other_tasks_run_between_the_records_it_reads() -> None:
    suspensions = Suspensions(store=MemorySuspensions(), key=KEY)
    for number in range(10):
        await suspensions.store.put(await suspensions.seal(record(number)), max_per_session=16)
    listed, turns = await turns_during(lambda: suspensions.undecided(limit=10))
    assert len(listed) == 10
    assert turns >= 9


async def test_a_replayed_tool_call_lets_other_tasks_run_between_the_records_it_reads() -> None:
    suspensions = Suspensions(store=MemorySuspensions(), key=KEY)
    await suspensions.store.put(await suspensions.seal(record(0, code="return 'wanted'")), max_per_session=16)
    for number in range(1, 10):  # newer pauses of other programs under the same tool call id
        await suspensions.store.put(await suspensions.seal(record(number)), max_per_session=16)
    found, turns = await turns_during(lambda: suspensions.of_call("session", "tool-call", "return 'wanted'"))
    assert found is not None
    assert found[0].id == "susp-0"
    assert turns >= 9
